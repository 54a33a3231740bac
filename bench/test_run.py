#!/usr/bin/env python3
"""Tests of bench/run's pure parts: the driver-line contract check, medians
and the Strata/peer ratios (which direction is "better"), the Markdown
splice (only the text between the markers changes) and the SVG plots.
Run: python3 bench/test_run.py (test.sh does)."""
import importlib.machinery
import importlib.util
import os
import tempfile
import unittest
from pathlib import Path

_path = str(Path(__file__).resolve().parent / "run")
_spec = importlib.util.spec_from_loader("bench_run", importlib.machinery.SourceFileLoader("bench_run", _path))
run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run)


def line(engine, workload, variant, **figures):
    return {"engine": engine, "version": "1", "workload": workload, "variant": variant,
            "figures": figures, "options": {}, "durability": {"wal": True, "sync_per_write": False},
            "round": 0}


W3 = {"ingest_ms_p50": 1.0, "ingest_ms_p99": 2.0, "ingest_ms_max": 3.0}


class CheckLine(unittest.TestCase):
    def test_good_line_passes(self):
        self.assertIsNone(run.check_line(line("strata", "w3", "overlap", **W3), "strata", "w3", "overlap"))

    def test_missing_figure_is_caught(self):
        figs = dict(W3)
        del figs["ingest_ms_p99"]
        self.assertIn("ingest_ms_p99", run.check_line(line("pebble", "w3", "overlap", **figs),
                                                      "pebble", "w3", "overlap"))

    def test_wrong_run_is_caught(self):
        self.assertIn("reported", run.check_line(line("pebble", "w3", "control", **W3),
                                                 "pebble", "w3", "overlap"))

    def test_unstated_or_synced_durability_is_caught(self):
        rec = line("rocksdb", "w3", "overlap", **W3)
        rec["durability"] = {"wal": True, "sync_per_write": True}
        self.assertIn("durability", run.check_line(rec, "rocksdb", "w3", "overlap"))
        del rec["durability"]
        self.assertIn("durability", run.check_line(rec, "rocksdb", "w3", "overlap"))


class Tables(unittest.TestCase):
    runs = [line("strata", "w2", "batch=1", rows_per_s=v) for v in (10, 30, 20)] + \
        [line("rocksdb", "w2", "batch=1", rows_per_s=5), line("pebble", "w2", "batch=1", rows_per_s=40),
         line("strata", "w3", "overlap", **W3),
         line("rocksdb", "w3", "overlap", **{k: v * 4 for k, v in W3.items()}),
         line("pebble", "w3", "overlap", **{k: v * 2 for k, v in W3.items()})]
    meta = {"date": "d", "cpu": "c", "cores": 2, "memory_gib": 1, "kernel": "k", "loadavg_start": 1.0,
            "loadavg_end": 1.0, "commit": "x", "results": "r.jsonl"}

    def test_median_per_engine_and_case(self):
        med = run.medians(self.runs)
        self.assertEqual(med[("w2", "batch=1")]["strata"]["rows_per_s"], 20)

    def test_best_peer_is_the_highest_rate_and_the_lowest_latency(self):
        md = run.render_markdown(self.meta, self.runs, run.medians(self.runs), {})
        # rows/s: best peer is Pebble's 40 -> 20/40; RocksDB 20/5.
        self.assertIn("| batch=1 | rows/s | 20.0 | 5.00 | 40.0 | 4.00x | 0.50x | 0.50x |", md)
        # latency: best peer is Pebble's 2.0 ms (lower) -> 1/2.
        self.assertIn("| overlap | ingest median ms | 1.00 | 4.00 | 2.00 | 0.25x | 0.50x | 0.50x |", md)

    def test_splice_changes_only_the_marked_part(self):
        with tempfile.TemporaryDirectory() as d:
            doc = Path(d) / "b.md"
            doc.write_text(f"intro\n{run.BEGIN}\nold\n{run.END}\noutro\n")
            run.splice(doc, "new table")
            self.assertEqual(doc.read_text(), f"intro\n{run.BEGIN}\nnew table\n{run.END}\noutro\n")
            run.splice(doc, "again")
            self.assertEqual(doc.read_text(), f"intro\n{run.BEGIN}\nagain\n{run.END}\noutro\n")

    def test_smoke_and_real_blocks_are_separate(self):
        with tempfile.TemporaryDirectory() as d:
            doc = Path(d) / "b.md"
            doc.write_text(f"{run.BEGIN}\nreal\n{run.END}\n{run.SMOKE_BEGIN}\nold\n{run.SMOKE_END}\n")
            run.splice(doc, "smoke", run.SMOKE_BEGIN, run.SMOKE_END)
            self.assertEqual(doc.read_text(),
                             f"{run.BEGIN}\nreal\n{run.END}\n{run.SMOKE_BEGIN}\nsmoke\n{run.SMOKE_END}\n")

    def test_splice_refuses_a_file_without_markers(self):
        with tempfile.TemporaryDirectory() as d:
            doc = Path(d) / "b.md"
            doc.write_text("no markers\n")
            with self.assertRaises(SystemExit):
                run.splice(doc, "x")
            self.assertEqual(doc.read_text(), "no markers\n")

    def test_plots_have_one_line_per_engine(self):
        with tempfile.TemporaryDirectory() as d:
            runs = self.runs + [line(e, "w2", "batch=64", rows_per_s=7) for e in run.ENGINES]
            out = run.render_svgs(run.medians(runs), Path(d), "", False)
            svg = (Path(d) / "bench-w2.svg").read_text()
            run.render_svgs(run.medians(runs), Path(d), "", True)
            self.assertTrue((Path(d) / "smoke-bench-w2.svg").exists())
            self.assertEqual(svg.count("<polyline"), 3)
            self.assertEqual(out["w2"][0][0], "bench-w2.svg")


W5 = {"load_settle_s": 10.0, "load_s": 8.0, "settle_s": 2.0, "write_amp": 3.0, "peak_l0_files": 4,
      "peak_l0_sublevels": 2, "stall_s": 0.0, "largest_compaction_bytes": 50e6, "largest_compaction_s": 1.0,
      "largest_l0_compaction_bytes": 20e6, "largest_l0_compaction_frac": 0.05, "units": 20}


class W5Tables(unittest.TestCase):
    runs = [line("strata", "w5", "sublevels", **W5),
            line("strata", "w5", "classic", **{**W5, "load_settle_s": 25.0, "write_amp": 4.0}),
            line("rocksdb", "w5", "sublevels", **{**W5, "load_settle_s": 20.0}),
            line("pebble", "w5", "sublevels", **{**W5, "load_settle_s": 40.0})]

    def test_classic_is_strata_only_and_compared_with_the_peers_one_run(self):
        self.assertTrue(run.strata_only("w5", "classic"))
        self.assertFalse(run.strata_only("w5", "sublevels"))
        self.assertTrue(run.strata_only("w1", "import-direct-random"))
        self.assertEqual(run.peer_key(("w5", "classic")), ("w5", "sublevels"))
        md = run.render_markdown(Tables.meta, self.runs, run.medians(self.runs), {})
        self.assertIn("| classic | load+settle s | 25.0 | 20.0 | 40.0 | 1.25x | 0.62x | 1.25x |", md)
        # bytes are shown in MB
        self.assertIn("| sublevels | largest compaction MB | 50.0 | 50.0 | 50.0 |", md)

    def test_verdict_compares_sublevels_with_classic(self):
        v = run.w5_verdict(run.medians(self.runs))
        self.assertIn("**60% less**", v)  # 1 - 10/25
        self.assertIn("**5.0% of the data**", v)
        self.assertEqual(run.w5_verdict(run.medians(self.runs[:1])), "")
        slower = [self.runs[0], line("strata", "w5", "classic", **{**W5, "load_settle_s": 8.0})]
        self.assertIn("**25% more**", run.w5_verdict(run.medians(slower)))
        self.assertNotIn("floor", v)

    def test_verdict_adds_sliced_and_floor(self):
        self.assertTrue(run.strata_only("w5", "floor"))
        self.assertTrue(run.strata_only("w5", "sliced"))
        more = self.runs + [line("strata", "w5", "floor", **{**W5, "load_settle_s": 15.0}),
                            line("strata", "w5", "sliced", **{**W5, "load_settle_s": 20.0,
                                                              "largest_l0_compaction_frac": 0.06})]
        v = run.w5_verdict(run.medians(more))
        self.assertIn("(`floor`) took 15.0 s, 40% below classic", v)  # 1 - 15/25
        self.assertIn("(`sliced`): 20.0 s, 20% below classic", v)
        self.assertIn("**6.0% of the data**", v)
        slow = self.runs + [line("strata", "w5", "sliced", **{**W5, "load_settle_s": 30.0})]
        self.assertIn("30.0 s, 20% above classic", run.w5_verdict(run.medians(slow)))

    def test_w5_plots_have_a_bar_per_engine_and_classic(self):
        with tempfile.TemporaryDirectory() as d:
            out = run.render_svgs(run.medians(self.runs), Path(d), "", False)
            svg = (Path(d) / "bench-w5-time.svg").read_text()
            self.assertEqual(svg.count("<rect") - 1, 4)  # minus the background
            self.assertIn("Strata classic", svg)
            self.assertEqual([f for f, _ in out["w5"]], ["bench-w5-time.svg", "bench-w5-wa.svg"])
            out = run.render_svgs(run.medians(self.runs), Path(d), "", False, block="w5-100")
            self.assertEqual([f for f, _ in out["w5"]], ["w5-100-bench-w5-time.svg", "w5-100-bench-w5-wa.svg"])

    def test_which_engines_run_which_cases(self):
        self.assertEqual([e for e in run.ENGINES if run.runs_case(e, "micro", "puts-4")],
                         ["strata", "rocksdb"])
        self.assertEqual([e for e in run.ENGINES if run.runs_case(e, "w5", "classic")], ["strata"])
        self.assertEqual([e for e in run.ENGINES if run.runs_case(e, "w1", "import-pipeline-pk")],
                         ["strata"])
        self.assertEqual([e for e in run.ENGINES if run.runs_case(e, "w4", "disjoint")], list(run.ENGINES))

    def test_plan_keeps_only_the_asked_variants(self):
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "stock-w1-random.csv").write_text("")
            cases = run.plan(["w5"], True, Path(d), None, {"classic"})
            self.assertEqual([(c[0], c[1]) for c in cases], [("w5", "classic")])

    def test_timelines_give_rows_per_second_and_memory(self):
        rows = [0, 1000, 2000, 3000, 4000, 5000, 8000, 11000]
        rec = line("strata", "w1", "import-pipeline-random",
                   timeline=[[i + 1.0, n, (i + 1) * 10e6] for i, n in enumerate(rows)])
        with tempfile.TemporaryDirectory() as d:
            out = run.render_svgs({}, Path(d), "", False, [rec], timelines=True)
            files = sorted(f for f, _ in out["w1"])
            self.assertEqual(files, ["bench-timeline-w1-import-pipeline-random-rows.svg",
                                     "bench-timeline-w1-import-pipeline-random-rss.svg"])
            svg = (Path(d) / files[0]).read_text()
            # rows/s over 5-sample windows: 1,000, 1,400, then 1,800 (the
            # peak; the axis tops out at 1.1 x that)
            self.assertIn(">1,980<", svg)
            self.assertEqual(svg.split('points="')[1].split('"')[0].count(","), 3)
            self.assertIn(">88.0<", (Path(d) / files[1]).read_text())  # 80 MB x 1.1
            self.assertEqual(run.render_svgs({}, Path(d), "", False, [rec], timelines=False), {})

    def test_named_block_markers(self):
        self.assertEqual(run.block_markers(None), (run.BEGIN, run.END))
        with tempfile.TemporaryDirectory() as d:
            doc = Path(d) / "b.md"
            b, e = run.block_markers("w5")
            doc.write_text(f"{run.BEGIN}\nreal\n{run.END}\n{b}\nold\n{e}\n")
            run.splice(doc, "w5 table", b, e)
            self.assertEqual(doc.read_text(), f"{run.BEGIN}\nreal\n{run.END}\n{b}\nw5 table\n{e}\n")


class Toolchains(unittest.TestCase):
    def setUp(self):
        self.env = os.environ.get("CI")

    def tearDown(self):
        if self.env is None:
            os.environ.pop("CI", None)
        else:
            os.environ["CI"] = self.env

    def test_missing_toolchain_skips_outside_ci(self):
        os.environ["CI"] = "false"
        run.skip_or_fail([("pebble", "no go")])  # logs, does not exit

    def test_missing_toolchain_fails_under_ci(self):
        os.environ["CI"] = "true"
        with self.assertRaises(SystemExit):
            run.skip_or_fail([("pebble", "no go")])

    def test_missing_go_and_rocksdb_are_detected(self):
        which = run.shutil.which
        exists = run.Path.exists
        try:
            run.shutil.which = lambda name: None
            run.Path.exists = lambda self: False
            self.assertEqual([e for e, _ in run.missing_toolchains()], ["rocksdb", "pebble"])
        finally:
            run.shutil.which = which
            run.Path.exists = exists


class Steal(unittest.TestCase):
    def test_steal_is_the_stolen_share_of_all_ticks_between_readings(self):
        self.assertEqual(run.steal_pct((1000, 40), (3000, 240)), 10.0)
        self.assertEqual(run.steal_pct((1000, 40), (3000, 40)), 0.0)

    def test_a_missing_or_unchanged_reading_gives_none(self):
        self.assertIsNone(run.steal_pct(None, (3000, 40)))
        self.assertIsNone(run.steal_pct((3000, 40), None))
        self.assertIsNone(run.steal_pct((3000, 40), (3000, 40)))

    def test_this_machine_reports_steal_within_its_total(self):
        t = run.cpu_ticks()
        if t is None:
            self.skipTest("no /proc/stat")
        self.assertGreater(t[0], 0)
        self.assertLessEqual(t[1], t[0])

    def test_the_header_states_steal_when_measured(self):
        runs = [line("strata", "w3", "overlap", **W3)]
        meta = {"date": "d", "cpu": "c", "cores": 2, "memory_gib": 1, "kernel": "k", "loadavg_start": 1.0,
                "loadavg_end": 1.0, "commit": "x", "results": "r", "host_steal_pct": 9.87}
        md = lambda: run.render_markdown(meta, runs, run.medians(runs), {})
        self.assertIn("stolen by the host 9.9%", md())
        del meta["host_steal_pct"]
        self.assertNotIn("stolen", md())


if __name__ == "__main__":
    unittest.main()
