//! W4's opt-in per-Put trace (`STRATA_BENCH_PUT_TRACE=1`): what the
//! slowest Puts did, to attribute the tail rather than guess at it.
//!
//! For every Put the driver reads, just before and just after the call
//! (outside the timed span), the thread's resource usage
//! (`getrusage(RUSAGE_THREAD)`: involuntary and voluntary context switches,
//! minor and major page faults), the CPU it runs on, and Strata's
//! per-thread write-wait totals (`strata::thread_write_waits`: nanoseconds
//! per cause). The difference says, per Put: was it preempted (an
//! involuntary switch), did it block (a voluntary one: a lock or a
//! condition variable), did it fault pages in, did it move to another CPU,
//! and which of the commit's phases took the time. It also reads the
//! thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): the Put's latency less
//! that is its time off the CPU. With the kernel's paravirtual steal
//! accounting (`CONFIG_PARAVIRT_TIME_ACCOUNTING`, on in this VM's kernel),
//! time the hypervisor ran something else on the virtual CPU is not the
//! thread's CPU time, so a slow Put off the CPU without a context switch
//! was stolen by the host: no guest task ran instead, and nothing in
//! the engine could have shortened it. `report` prints the
//! slowest 0.01% (the Puts at and above p99.99) one per line, and a
//! summary of the slowest 0.1%, on stderr. The reads cost about a
//! microsecond per Put, outside what is timed.

use std::time::Duration;

/// One reading (before a Put), or the difference between two (a Put).
#[derive(Clone, Copy)]
pub struct Sample {
    nivcsw: i64,
    nvcsw: i64,
    minflt: i64,
    majflt: i64,
    cpu: i32,
    /// The thread's CPU time, ns (a difference: the Put's time on a CPU).
    cpu_ns: u64,
    /// Nanoseconds per wait cause.
    waits: [u64; 9],
    /// The Put's latency (a difference only).
    took: Duration,
    /// Whether the CPU differed before and after (a difference only).
    migrated: bool,
    /// `CLOCK_MONOTONIC` at the reading, ns (a difference: the Put's end),
    /// the clock `perf record -k CLOCK_MONOTONIC` stamps its samples with,
    /// so `bench/cpu-silences` can find the Put in a CPU-wide profile.
    at_ns: u64,
}

/// The calling thread's involuntary and voluntary context switches so far.
pub fn thread_switches() -> (i64, i64) {
    let s = Sample::now();
    (s.nivcsw, s.nvcsw)
}

impl Sample {
    /// The thread's figures now.
    pub fn now() -> Sample {
        // SAFETY: `getrusage` and `clock_gettime` fill the zeroed structs
        // they are given; `sched_getcpu` takes no arguments.
        let (ru, cpu, ts, mono) = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
            let mut ts: libc::timespec = std::mem::zeroed();
            libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
            let mut mono: libc::timespec = std::mem::zeroed();
            libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut mono);
            (ru, libc::sched_getcpu(), ts, mono)
        };
        Sample {
            nivcsw: ru.ru_nivcsw,
            nvcsw: ru.ru_nvcsw,
            minflt: ru.ru_minflt,
            majflt: ru.ru_majflt,
            cpu,
            cpu_ns: ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
            waits: strata::thread_write_waits().map(|(_, n)| n),
            took: Duration::ZERO,
            migrated: false,
            at_ns: mono.tv_sec as u64 * 1_000_000_000 + mono.tv_nsec as u64,
        }
    }

    /// The Put between `before` and now (`self`), which took `took`.
    pub fn since(&self, before: &Sample, took: Duration) -> Sample {
        Sample {
            nivcsw: self.nivcsw - before.nivcsw,
            nvcsw: self.nvcsw - before.nvcsw,
            minflt: self.minflt - before.minflt,
            majflt: self.majflt - before.majflt,
            cpu: self.cpu,
            cpu_ns: self.cpu_ns.saturating_sub(before.cpu_ns),
            waits: std::array::from_fn(|i| self.waits[i].wrapping_sub(before.waits[i])),
            took,
            migrated: self.cpu != before.cpu,
            at_ns: self.at_ns,
        }
    }
}

fn micros(ns: u64) -> f64 {
    ns as f64 / 1e3
}

impl Sample {
    /// A Put's time off the CPU: its latency less its CPU time.
    fn off_cpu_ns(&self) -> u64 {
        (self.took.as_nanos() as u64).saturating_sub(self.cpu_ns)
    }

    /// Off the CPU for at least half its latency with no context switch:
    /// the virtual CPU was not running (stolen by the host).
    fn stolen(&self) -> bool {
        self.nivcsw == 0 && self.nvcsw == 0 && 2 * self.off_cpu_ns() >= self.took.as_nanos() as u64
    }
}

/// Prints the slowest 0.01% of `puts` one by one and a summary of the
/// slowest 0.1%.
pub fn report(mut puts: Vec<Sample>) {
    if puts.is_empty() {
        return;
    }
    let names = strata::thread_write_waits().map(|(c, _)| c);
    puts.sort_by_key(|p| std::cmp::Reverse(p.took));
    let top = puts.len().div_ceil(10_000);
    eprintln!(
        "put trace: the slowest {top} of {} Puts (µs; off: time off the CPU; ivcsw/vcsw: involuntary/voluntary switches, flt: minor faults, mig: moved CPU; phases > 0.5 µs; end: CLOCK_MONOTONIC, s)",
        puts.len()
    );
    for p in &puts[..top] {
        let phases: Vec<String> = p
            .waits
            .iter()
            .zip(names.iter())
            .filter(|(&ns, _)| ns >= 500)
            .map(|(&ns, name)| format!("{name} {:.1}", micros(ns)))
            .collect();
        let counted: u64 = p.waits.iter().sum();
        let other = (p.took.as_nanos() as u64).saturating_sub(counted);
        eprintln!(
            "  {:>8.1}  off {:.1}{} cpu {} ivcsw {} vcsw {} flt {}{} mig {}  [{}] other {:.1} end {}.{:09}",
            p.took.as_nanos() as f64 / 1e3,
            micros(p.off_cpu_ns()),
            if p.stolen() { " (stolen)" } else { "" },
            p.cpu,
            p.nivcsw,
            p.nvcsw,
            p.minflt,
            if p.majflt > 0 {
                format!(" majflt {}", p.majflt)
            } else {
                String::new()
            },
            u8::from(p.migrated),
            phases.join(", "),
            micros(other),
            p.at_ns / 1_000_000_000,
            p.at_ns % 1_000_000_000
        );
    }
    let band = &puts[..puts.len().div_ceil(1_000)];
    let with = |f: &dyn Fn(&Sample) -> bool| band.iter().filter(|p| f(p)).count();
    eprintln!(
        "put trace: slowest 0.1% ({} Puts, from {:.1} µs): stolen by the host {} (their time off the CPU {:.0}% of their latency), preempted {}, blocked {}, faulted {}, migrated {}",
        band.len(),
        band.last().map_or(0.0, |p| p.took.as_nanos() as f64 / 1e3),
        with(&|p| p.stolen()),
        {
            let stolen = band.iter().filter(|p| p.stolen());
            let (off, took) = stolen.fold((0u64, 0u64), |(o, t), p| {
                (o + p.off_cpu_ns(), t + p.took.as_nanos() as u64)
            });
            100.0 * off as f64 / took.max(1) as f64
        },
        with(&|p| p.nivcsw > 0),
        with(&|p| p.nvcsw > 0),
        with(&|p| p.minflt > 0),
        with(&|p| p.migrated),
    );
    let on = |set: &[Sample], cpu: i32| set.iter().filter(|p| p.cpu == cpu).count();
    eprintln!(
        "put trace: on CPU 0/1: all Puts {}/{}, slowest 0.1% {}/{}",
        on(&puts, 0),
        on(&puts, 1),
        on(band, 0),
        on(band, 1)
    );
    let mut by_phase = [0usize; 10];
    for p in band {
        let counted: u64 = p.waits.iter().sum();
        let other = (p.took.as_nanos() as u64).saturating_sub(counted);
        let (i, &max) = p
            .waits
            .iter()
            .enumerate()
            .max_by_key(|(_, &ns)| ns)
            .unwrap_or((0, &0));
        by_phase[if other > max { 9 } else { i }] += 1;
    }
    let parts: Vec<String> = by_phase
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(i, n)| format!("{} {n}", if i == 9 { "other" } else { names[i] }))
        .collect();
    eprintln!("put trace: their longest phase: {}", parts.join(", "));
}
