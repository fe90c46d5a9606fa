"""The dashboard page answers every combination of its filters without a 500, over real HTTP on 127.0.0.1, and its
summary reads as English and says where the data ends (issue 37, 5j). In the slow tier: some forty pages and their
figures (``test_dashboard_page.py`` checks an empty period's sentence in the fast tier)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import httpx
import pytest

from tests.support.report_warehouse import SINCE, UNTIL
from toolkit.presentation.dashboard_page import serving

pytestmark = pytest.mark.slow

SINCES = [None, "1d", "7d", SINCE, "2100-01-01"]
UNTILS = [None, "now", UNTIL, "1d"]
#: The page's one-sentence summary.
SUMMARY = re.compile(r'<p id="summary">(.*?)</p>', re.S)


@pytest.fixture(scope="module")
def url(warehouse: Path):
    with serving(warehouse) as running:
        yield running


def _query(**given: str | None) -> dict[str, str]:
    return {k: v for k, v in given.items() if v is not None}


@pytest.mark.parametrize(("network", "bucket"), [(None, None), ("Ethereum Mainnet", "1h")])
def test_every_period_answers_a_page_that_reads_as_english(url: str, network: str | None, bucket: str | None) -> None:
    for since, until in itertools.product(SINCES, UNTILS):
        params = _query(since=since, until=until, network=network, bucket=bucket)
        page = httpx.get(url, params=params, timeout=120)
        assert page.status_code == 200, (params, page.text[:300])
        found = SUMMARY.search(page.text)
        if found is None:  # a period the metrics refuse (it ends before it starts) is said on the page, not a 500
            assert 'class="error"' in page.text, (params, page.text[:300])
            continue
        sentence = found.group(1)
        assert "the data ends " in sentence and sentence.endswith("."), (params, sentence)
        assert "no finished operations of finished" not in sentence, (params, sentence)
        if sentence.startswith("No operation was created"):
            assert "failure rate" not in sentence.replace("no failure rate", ""), (params, sentence)


def test_every_period_draws_its_figures(url: str) -> None:
    for since, until in itertools.product(SINCES[:3], UNTILS[:2]):
        params = _query(since=since, until=until)
        page = httpx.get(url, params=params, timeout=120)
        if 'class="error"' in page.text:
            continue
        for view in ("failure", "latency"):  # one request draws every view's figure for these filters
            answer = httpx.get(f"{url}figure/{view}.png", params=params, timeout=120)
            assert answer.status_code == 200, (params, view, answer.text[:300])
            assert answer.content.startswith(b"\x89PNG"), (params, view)
