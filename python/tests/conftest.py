"""Shared fixtures: a fresh database directory per test."""

import pytest

import strata


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "db"


@pytest.fixture
def db(db_path):
    d = strata.DB(db_path)
    yield d
    d.close()
