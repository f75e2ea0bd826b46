"""States and measured values as the console writes them in running text."""

from django.template import Context, Template

from console.templatetags.readings import amount, by_partition, reading, state_words
from console.views.approvals import _approvers


def test_a_state_reads_as_words():
    assert state_words("LINK_PAUSED") == "link paused"
    assert state_words("PENDING_STOPPED") == "pending stopped"
    assert state_words("ACTIVE") == "active"


def test_a_measured_value_is_whole_and_grouped_from_100_and_has_one_decimal_below():
    assert reading(13786.5) == "13,786"  # round half to even, as Python rounds
    assert reading(218000) == "218,000"
    assert reading(100) == "100"
    assert reading(12.54) == "12.5"
    assert reading(3.0) == "3"
    assert reading(0) == "0"
    assert reading(None) == "–"


def test_the_charts_caption_shows_readings():
    page = Template('{% include "_charts.html" %}').render(
        Context(
            {
                "charts_url": "/x",
                "charts": [
                    {
                        "title": "Records copied",
                        "unit": "records/s",
                        "latest": 13786.5,
                        "peak": 21409.25,
                        "empty": False,
                        "width": 10,
                        "height": 10,
                        "lines": [],
                        "range_words": "last hour",
                    }
                ],
            }
        )
    )
    assert '<span class="chart-latest">13,786</span> records/s' in page
    assert "now · peak 21,409 · last hour" in page


def test_the_approval_message_counts_approvers_in_words():
    assert _approvers(1) == "an approver"
    assert _approvers(2) == "2 approvers"


def test_a_rate_or_count_of_one_is_in_the_singular():
    assert amount(1, "records/s") == "1 record/s"
    assert amount(1.02, "records/s") == "1 record/s"  # as it reads
    assert amount(0, "records/s") == "0 records/s"
    assert amount(2.5, "records/s") == "2.5 records/s"
    assert amount(1234, "records/s") == "1,234 records/s"
    assert amount(1, "records") == "1 record"
    assert amount(1, "s") == "1 s"
    assert amount(None, "records/s") == "–"
    chart = {"title": "Lag", "unit": "records", "latest": 1, "peak": 1, "empty": False}
    page = Template('{% include "_charts.html" %}').render(Context({"charts": [chart]}))
    assert '<span class="chart-latest">1</span> record <span' in page
    stream = Template('{% include "links/_stream.html" %}').render(
        Context({"stream": {"state": "RUNNING", "records_per_sec": 1.0, "bytes_per_sec": 80}})
    )
    assert "RUNNING: 1 record/s, 80\xa0bytes/s" in stream


def test_partitions_of_a_stored_report_are_listed_in_order():
    stored = {"10": 3, "2": 1, "0": 5, "1": 0}
    assert by_partition(stored) == [("0", 5), ("1", 0), ("2", 1), ("10", 3)]
    assert by_partition(None) == []
