import pytest

from dfslab.units import UnitError, human_bytes, parse_bandwidth, parse_byte_rate, parse_duration, parse_size


@pytest.mark.parametrize("text,expected", [
    ("4GiB", 4 * 2**30), ("512MiB", 512 * 2**20), ("1.5KiB", 1536), ("4 gib", 4 * 2**30), ("100B", 100),
    # fio's, dd's and Ceph's shorthand: a prefix alone is a power of 1024
    ("4k", 4096), ("4K", 4096), ("64m", 64 * 2**20), ("1g", 2**30), ("2T", 2 * 2**40),
])
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text,binary,decimal", [
    ("4kB", "4KiB (4096 B)", "4000B"), ("64MB", "64MiB (67108864 B)", "64000000B"), ("10GB", "10GiB", "10000000000B"),
    ("1KB", "1KiB (1024 B)", "1000B"), ("2tb", "2TiB", "2000000000000B"),
])
def test_a_prefix_with_a_plain_b_is_refused_with_both_unambiguous_spellings(text, binary, decimal):
    """SI reads 64MB as 64,000,000 B and fio as 64 MiB: dfslab once ran `--bs=4000` for `bs: 4k`."""
    with pytest.raises(UnitError) as err:
        parse_size(text)
    assert "ambiguous" in str(err.value) and binary in str(err.value) and f"or {decimal}" in str(err.value)


def test_byte_rates_are_si_as_tools_print_them():
    assert parse_byte_rate("180MB/s") == 180e6 and parse_byte_rate("200MiB/s") == 200 * 2**20


@pytest.mark.parametrize("text,expected", [
    ("1gbit", 10**9), ("100mbit", 10**8), ("125MB/s", 10**9), ("1Gbps", 10**9), ("10kbit", 10**4),
])
def test_bandwidths(text, expected):
    assert parse_bandwidth(text) == expected


def test_bits_and_bytes_are_not_confused():
    assert parse_bandwidth("1Mb/s") == 10**6
    assert parse_bandwidth("1MB/s") == 8 * 10**6


@pytest.mark.parametrize("text,expected", [("0.5ms", 0.0005), ("30s", 30.0), ("2min", 120.0), ("250us", 0.00025)])
def test_durations(text, expected):
    assert parse_duration(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", [4, "4", "four GiB", "4XB", True, None, [4]])
def test_bad_sizes_are_refused_with_an_example(bad):
    with pytest.raises(UnitError) as err:
        parse_size(bad)
    assert "4GiB" in str(err.value) or "valid units" in str(err.value)


def test_human_bytes():
    assert human_bytes(512) == "512 B"
    assert human_bytes(3 * 2**20) == "3.0 MiB"
