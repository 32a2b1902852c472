"""Importing a broken export: every attack is one clear error naming file, line and field, and nothing is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpumem.catalog.inputs import load_catalog
from gpumem.commands import prices as prices_module
from gpumem.commands.prices import import_export
from gpumem.errors import BuildError

from .project import REPO

HEADER = "machine_id,gpu,gpus,price_per_gpu_hour,country,form_factor,interconnect\n"
ROW = "m1,RTX 4090,2,0.45,US,PCIe,PCIe\n"
TIME = "2026-11-07T09:00:00Z"
# The import's clock: two days after TIME, so TIME is not in the future.
NOW = datetime(2026, 11, 9, tzinfo=UTC)
CATALOGS = Path("catalogs")
PRICES = CATALOGS / "prices"
WRITTEN = PRICES / "2026-11-07T09-00Z.yaml"


@pytest.fixture
def root(inputs: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The copy of the inputs as the working folder, so messages name short relative paths."""
    monkeypatch.chdir(inputs)
    return inputs


def listing() -> dict[str, bytes]:
    """Every file of the prices folder, hidden temporary ones included."""
    return {p.name: p.read_bytes() for p in sorted(PRICES.iterdir())} if PRICES.is_dir() else {}


def refused(name: str, data: str | bytes, *, taken_at: str | None = TIME, now: datetime = NOW, kind: str | None = None) -> list[str]:
    """The problems of importing `data` as `name`, after checking that nothing was written."""
    path = Path(name)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8", newline="")
    else:
        path.write_bytes(data)
    before = listing()
    with pytest.raises(BuildError) as raised:
        import_export(path, CATALOGS, kind, taken_at, "USD", now=now)
    assert listing() == before
    assert str(raised.value).endswith("found; nothing was written.")
    return raised.value.lines


# Cell counts, byte-order mark and line ends


def test_a_row_with_more_cells_than_the_header_is_an_error(root):
    # An unquoted decimal comma: on main this was imported as price 1.0 in country "85".
    lines = refused("export.csv", "machine_id,gpu,gpus,price_per_gpu_hour,country\nm1,RTX 4090,2,1,85,US\nm2,RTX 4090,1,0.45,US\n")
    assert lines == [
        "export.csv:2: m1: cells: expected 5 cells as in the header, found 6; "
        "quote a value that holds a comma, and write prices with a decimal point"
    ]


def test_a_row_with_fewer_cells_than_the_header_is_an_error(root):
    # Without the check, a country left out would shift PCIe into country and leave interconnect unknown.
    lines = refused("export.csv", HEADER + ROW + "m2,RTX 4090,1,0.45,PCIe,PCIe\n")
    assert lines == ["export.csv:3: m2: cells: expected 7 cells as in the header, found 6"]


def test_an_excel_csv_with_a_byte_order_mark_and_crlf_line_ends_imports(root):
    data = "\ufeff" + (HEADER + ROW + 'm2,"H100 SXM",8,1.99,"DE",SXM,NVLink\n').replace("\n", "\r\n")
    Path("export.csv").write_bytes(data.encode("utf-8"))
    target = import_export(Path("export.csv"), CATALOGS, None, TIME, "USD", now=NOW)
    assert target == WRITTEN
    assert target.read_text().splitlines()[-2:] == [
        '  - {machine: "m1", gpu: rtx-4090, gpus: 2, price_per_gpu_hour: 0.45, country: "US", form_factor: "PCIe", interconnect: "PCIe"}',
        '  - {machine: "m2", gpu: h100-sxm, gpus: 8, price_per_gpu_hour: 1.99, country: "DE", form_factor: "SXM", interconnect: "NVLink"}',
    ]
    assert b"\r" not in target.read_bytes()


def test_a_json_export_with_a_byte_order_mark_imports(root):
    offers = [{"machine_id": "x1", "gpu": "B200", "gpus": 8, "price_per_gpu_hour": 6.1, "country": "NL"}]
    Path("export.json").write_bytes(b"\xef\xbb\xbf" + json.dumps({"taken_at": TIME, "offers": offers}).encode())
    assert import_export(Path("export.json"), CATALOGS, None, None, "USD", now=NOW) == WRITTEN


def test_a_doubled_byte_order_mark_is_named_not_taken_for_a_missing_column(root):
    data = b"\xef\xbb\xbf\xef\xbb\xbf" + (HEADER + ROW).encode()
    assert refused("export.csv", data) == [
        "export.csv: starts with two byte-order marks (EF BB BF twice), not one; save the export as UTF-8 once"
    ]


# Files that are not text, or not files


def test_an_export_that_is_not_utf8_is_refused(root):
    data = (HEADER + ROW).encode() + b"m2,RTX 4090,1,0.45,U\xffS,PCIe,PCIe\n"
    assert refused("export.csv", data) == ["export.csv: not UTF-8 text (invalid byte 0xff at offset 124, line 3); save the export as UTF-8"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_an_export_that_is_not_a_regular_file_is_refused(root):
    os.mkfifo("pipe.csv")  # reading it would wait forever
    before = listing()
    with pytest.raises(BuildError) as raised:
        import_export(Path("pipe.csv"), CATALOGS, None, TIME, "USD", now=NOW)
    assert raised.value.lines == ["pipe.csv: not a regular file (a pipe); give the export as a file"]
    Path("folder.csv").mkdir()
    with pytest.raises(BuildError) as raised:
        import_export(Path("folder.csv"), CATALOGS, None, TIME, "USD", now=NOW)
    assert raised.value.lines == ["folder.csv: not a regular file (a folder); give the export as a file"]
    assert listing() == before


# Python's own limits: a huge CSV field, deep JSON, huge numbers


def test_a_200000_character_field_is_reported_with_its_line(root):
    lines = refused("export.csv", HEADER + ROW + "m2,RTX 4090,1,0.45,US,PCIe," + "x" * 200_000 + "\nm3,RTX 4090,0,0.45,US,PCIe,PCIe\n")
    assert lines == [
        "export.csv:3: ?: cells: a cell of more than 131,072 characters (no value of an export needs more than 100)",
        "export.csv:4: m3: gpus: expected a positive integer, got '0'",
    ]


def test_json_nested_100000_deep_is_reported(root):
    assert refused("export.json", "[" * 100_000 + "]" * 100_000) == [
        "export.json: JSON nested too deeply to read (an export is a list of offers, each an object of values)"
    ]


def test_json_numbers_of_hundreds_or_thousands_of_digits_are_reported(root):
    row = '[{"machine_id": "x", "gpu": "B200", "gpus": %s, "price_per_gpu_hour": %s, "country": "US"}]'
    assert refused("export.json", row % ("8", "1" + "0" * 400)) == [
        "export.json: row 1: x: price_per_gpu_hour: a number of 401 digits is more than 100 per GPU-hour, "
        "the most a GPU rents for (prices.bounds in rules.yaml)"
    ]
    assert refused("export.json", row % ("1" + "0" * 5000, "6")) == [
        "export.json: JSON value out of range: Exceeds the limit (4300 digits) for integer string conversion: value has 5001 digits"
    ]


# Times


@pytest.mark.parametrize(
    ("taken_at", "message"),
    [
        (
            "9999-12-31T23:59:59-23:59",
            "expected a UTC time like 2026-10-31T16:52:00Z, got '9999-12-31T23:59:59-23:59' (out of range once converted to UTC)",
        ),
        (
            "0001-01-01T00:00:00+23:59",
            "expected a UTC time like 2026-10-31T16:52:00Z, got '0001-01-01T00:00:00+23:59' (out of range once converted to UTC)",
        ),
        ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z is before 2000: no export was taken then (a clock at zero?)"),
        ("2026-02-30T09:00:00Z", "expected a UTC time like 2026-10-31T16:52:00Z, got '2026-02-30T09:00:00Z'"),
        ("10000-01-01T00:00:00Z", "expected a UTC time like 2026-10-31T16:52:00Z, got '10000-01-01T00:00:00Z'"),
        ("2026-11-07T09:00:00+24:00", "expected a UTC time like 2026-10-31T16:52:00Z, got '2026-11-07T09:00:00+24:00'"),
        ("7" * 5000, "expected a UTC time like 2026-10-31T16:52:00Z, got '777777777777777777777777777777'… (5,000 characters)"),
    ],
)
def test_absurd_times_are_refused(root, taken_at, message):
    assert refused("export.csv", HEADER + ROW, taken_at=taken_at) == [f"--taken-at: taken_at: {message}"]


def test_a_time_in_the_future_is_refused_on_import(root):
    assert refused("export.csv", HEADER + ROW, taken_at="2099-01-01T00:00:00Z") == [
        "--taken-at: taken_at: 2099-01-01T00:00:00Z is in the future: the clock says 2026-11-09T00:00:00Z, "
        "and at most 5 minutes of clock skew are allowed (prices.clock in rules.yaml)"
    ]
    offers = [{"machine_id": "x1", "gpu": "B200", "gpus": 8, "price_per_gpu_hour": 6.1, "country": "NL"}]
    assert refused("export.json", json.dumps({"taken_at": "2026-11-09T00:06:00Z", "offers": offers}), taken_at=None) == [
        "export.json: taken_at: 2026-11-09T00:06:00Z is in the future: the clock says 2026-11-09T00:00:00Z, "
        "and at most 5 minutes of clock skew are allowed (prices.clock in rules.yaml)"
    ]


def test_a_time_a_few_minutes_ahead_is_clock_skew_and_imports(root):
    Path("export.csv").write_text(HEADER + ROW)
    target = import_export(Path("export.csv"), CATALOGS, None, "2026-11-09T00:04:59Z", "USD", now=NOW)
    assert target.name == "2026-11-09T00-04-59Z.yaml"


# Bounds


def test_prices_and_machine_sizes_outside_the_bounds_name_their_row(root):
    lines = refused(
        "export.csv",
        HEADER
        + "m1,RTX 4090,2,0.0000001,US,PCIe,PCIe\n"
        + "m2,RTX 4090,2,1e12,US,PCIe,PCIe\n"
        + "m3,RTX 4090,64,0.5,US,PCIe,PCIe\n"
        + 'm4,RTX 4090,2,"0,45",US,PCIe,PCIe\n'
        + "m5,RTX 4090,1_0,0.5,US,PCIe,PCIe\n"
        + "m6,RTX 4090,2,nan,US,PCIe,PCIe\n"
        + "m7,RTX 4090,2,0.01,US,PCIe,PCIe\n"
        + "m8,B300,16,100,US,SXM,NVLink\n",
    )
    assert lines == [
        "export.csv:2: m1: price_per_gpu_hour: '0.0000001' is less than 0.01 per GPU-hour, the least a GPU rents for (prices.bounds in rules.yaml)",
        "export.csv:3: m2: price_per_gpu_hour: '1e12' is more than 100 per GPU-hour, the most a GPU rents for (prices.bounds in rules.yaml)",
        "export.csv:4: m3: gpus: '64' GPUs is more than 16 in one machine, the most a machine holds (prices.bounds in rules.yaml)",
        "export.csv:5: m4: price_per_gpu_hour: expected a positive number, got '0,45' (write prices with a decimal point)",
        "export.csv:6: m5: gpus: expected a positive integer, got '1_0'",
        "export.csv:7: m6: price_per_gpu_hour: expected a positive number, got 'nan'",
    ]


def test_json_prices_outside_the_bounds_name_their_row(root):
    offers = [
        {"machine_id": "j1", "gpu": "B200", "gpus": 8, "price_per_gpu_hour": 1e-7, "country": "US"},
        {"machine_id": "j2", "gpu": "B200", "gpus": 8, "price_per_gpu_hour": 1e12, "country": "US"},
        {"machine_id": "j3", "gpu": "B200", "gpus": 1000, "price_per_gpu_hour": 6, "country": "US"},
        {"machine_id": "j4", "gpu": "B200", "gpus": 8, "price_per_gpu_hour": True, "country": "US"},
    ]
    assert refused("export.json", json.dumps(offers)) == [
        "export.json: row 1: j1: price_per_gpu_hour: 1e-07 is less than 0.01 per GPU-hour, the least a GPU rents for (prices.bounds in rules.yaml)",
        "export.json: row 2: j2: price_per_gpu_hour: 1000000000000.0 is more than 100 per GPU-hour, the most a GPU rents for (prices.bounds in rules.yaml)",
        "export.json: row 3: j3: gpus: 1000 GPUs is more than 16 in one machine, the most a machine holds (prices.bounds in rules.yaml)",
        "export.json: row 4: j4: price_per_gpu_hour: expected a positive number, got True",
    ]


# Texts: length and control characters


def test_absurdly_long_texts_are_refused(root):
    offers = [{"machine_id": "m" * 5_000_000, "gpu": "B200", "gpus": 8, "price_per_gpu_hour": 6, "country": "US"}]
    assert refused("export.json", json.dumps(offers)) == [
        "export.json: row 1: ?: machine_id: expected at most 100 characters, got 5,000,000: 'mmmmmmmmmmmmmmmmmmmm'…"
    ]
    lines = refused("export.csv", HEADER + f"m1,RTX 4090,2,0.45,{'U' * 5000},PCIe,PCIe\nm2,RTX 4090,2,0.45,US,{'P' * 101},PCIe\n")
    assert lines == [
        "export.csv:2: m1: country: expected at most 100 characters, got 5,000: 'UUUUUUUUUUUUUUUUUUUU'…",
        "export.csv:3: m2: form_factor: expected at most 100 characters, got 101: 'PPPPPPPPPPPPPPPPPPPP'…",
    ]


def test_control_characters_and_line_breaks_are_refused(root):
    lines = refused(
        "export.csv",
        HEADER
        + 'm1,RTX 4090,2,0.45,"U\nS",PCIe,PCIe\n'
        + "m2,RTX 4090,2,0.45,US,\u202ePCIe,PCIe\n"
        + "m3,RTX 4090,2,0.45,US,PCIe,PC\x1b[31mIe\n"
        + '"m\r\n4",RTX 4090,2,0.45,US,PCIe,PCIe\n',
    )
    assert lines == [
        "export.csv:2: m1: country: expected one line of plain text, got a control character (U+000A) in 'U\\nS'",
        "export.csv:4: m2: form_factor: expected one line of plain text, got a control character (U+202E) in '\\u202ePCIe'",
        "export.csv:5: m3: interconnect: expected one line of plain text, got a control character (U+001B) in 'PC\\x1b[31mIe'",
        "export.csv:6: ?: machine_id: expected one line of plain text, got a control character (U+000D) in 'm\\r\\n4'",
    ]
    offers = [{"machine_id": "x\ud800", "gpu": "B200", "gpus": 8, "price_per_gpu_hour": 6, "country": ["US"]}]
    assert refused("export.json", json.dumps(offers)) == [
        "export.json: row 1: ?: machine_id: expected one line of plain text, got a control character (U+D800) in 'x\\ud800'",
        "export.json: row 1: ?: country: expected text, got a list of 1 item",
    ]


def test_a_bad_currency_is_refused_before_anything_is_written(root):
    Path("export.csv").write_text(HEADER + ROW)
    with pytest.raises(BuildError) as raised:
        import_export(Path("export.csv"), CATALOGS, None, TIME, "dollars", now=NOW)
    assert raised.value.lines == ["--currency: expected a three-letter currency code like USD, got 'dollars'"]
    assert not WRITTEN.exists()


# Writing


def test_a_file_where_the_prices_folder_should_be_cannot_be_written(root):
    for path in PRICES.iterdir():
        path.unlink()
    PRICES.rmdir()
    PRICES.write_text("not a folder")
    Path("export.csv").write_text(HEADER + ROW)
    with pytest.raises(BuildError) as raised:
        import_export(Path("export.csv"), CATALOGS, None, TIME, "USD", now=NOW)
    assert raised.value.lines == ["catalogs/prices/2026-11-07T09-00Z.yaml: cannot write: catalogs/prices is not a folder"]
    assert PRICES.read_text() == "not a folder"


def test_a_read_only_prices_folder_is_a_clear_error_and_leaves_nothing(root, monkeypatch):
    # Tests run as root, whom permission bits do not stop: the folder refuses through os.open.
    def read_only(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(prices_module.os, "open", read_only)
    assert refused("export.csv", HEADER + ROW) == ["catalogs/prices/2026-11-07T09-00Z.yaml: cannot write: Permission denied"]


def test_a_failed_link_leaves_no_temporary_file(root, monkeypatch):
    def no_link(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(prices_module.os, "link", no_link)
    assert refused("export.csv", HEADER + ROW) == ["catalogs/prices/2026-11-07T09-00Z.yaml: cannot write: No space left on device"]


def test_a_missing_prices_folder_is_created(root):
    for path in PRICES.iterdir():
        path.unlink()
    PRICES.rmdir()
    Path("export.csv").write_text(HEADER + ROW)
    assert import_export(Path("export.csv"), CATALOGS, None, TIME, "USD", now=NOW) == WRITTEN
    assert list(listing()) == [WRITTEN.name]


def test_the_snapshot_is_written_through_a_unique_temporary_file(root, monkeypatch):
    renames = []
    link = os.link

    def spy(source, target):
        renames.append((Path(source), Path(target), Path(source).read_bytes()))
        link(source, target)

    monkeypatch.setattr(prices_module.os, "link", spy)
    Path("export.csv").write_text(HEADER + ROW)
    import_export(Path("export.csv"), CATALOGS, None, TIME, "USD", now=NOW)
    Path("export2.csv").write_text(HEADER + ROW)
    import_export(Path("export2.csv"), CATALOGS, None, "2026-11-07T09:00:30Z", "USD", now=NOW)
    (first, target, content), (second, _, _) = renames
    assert target == WRITTEN and content == WRITTEN.read_bytes()
    assert first.parent == second.parent == PRICES and first.name != second.name
    assert first.name.startswith(".2026-11-07T09-00Z.yaml.") and first.name.endswith(".tmp")
    assert sorted(listing()) == ["2026-10-31T16-52Z.yaml", "2026-11-07T09-00-30Z.yaml", "2026-11-07T09-00Z.yaml"]


def test_importing_the_moment_of_another_snapshot_is_refused(root):
    # A file of the right time under the longer name (with seconds) already holds 09:00:00.
    (PRICES / "2026-11-07T09-00-00Z.yaml").write_text(
        (PRICES / "2026-10-31T16-52Z.yaml").read_text().replace("2026-10-31T16:52:00Z", "2026-11-07T09:00:00Z")
    )
    assert refused("export.csv", HEADER + ROW) == [
        "catalogs/prices/2026-11-07T09-00Z.yaml: taken_at: 2026-11-07T09:00:00Z is already the taken_at of "
        "catalogs/prices/2026-11-07T09-00-00Z.yaml; nothing was written"
    ]


def test_importing_the_same_export_twice_changes_nothing(root):
    Path("export.csv").write_text(HEADER + ROW)
    import_export(Path("export.csv"), CATALOGS, None, TIME, "USD", now=NOW)
    before = listing()
    assert import_export(Path("export.csv"), CATALOGS, None, TIME, "USD", now=NOW) == WRITTEN
    assert listing() == before
    assert load_catalog(CATALOGS, now=NOW).snapshot.name == "2026-11-07T09-00Z"


def test_of_two_imports_for_one_moment_the_second_to_write_is_refused_and_the_first_kept(root, monkeypatch):
    """Each import checks that no snapshot holds its moment, then writes: another one landing in
    between (3 of 30 rounds of two processes did, on main) is found, not overwritten."""
    Path("first.csv").write_text(HEADER + ROW)
    Path("second.csv").write_text(HEADER + ROW.replace("0.45", "0.55"))
    checked, landed = prices_module._same_file, []

    def the_other_import_lands_meanwhile(target: Path, content: str) -> bool:
        found = checked(target, content)
        if not landed:  # right after the first check, the other import writes
            landed.append(target)
            import_export(Path("second.csv"), CATALOGS, None, TIME, "USD", now=NOW)
        return found

    monkeypatch.setattr(prices_module, "_same_file", the_other_import_lands_meanwhile)
    with pytest.raises(BuildError) as raised:
        import_export(Path("first.csv"), CATALOGS, None, TIME, "USD", now=NOW)
    assert raised.value.lines == [f"{WRITTEN}: a different snapshot for this time already exists; nothing was written"]
    assert "price_per_gpu_hour: 0.55" in WRITTEN.read_text()
    assert sorted(listing()) == ["2026-10-31T16-52Z.yaml", WRITTEN.name]  # no temporary file left


def test_a_snapshot_larger_than_a_build_reads_is_refused_on_import(root):
    """66,000 offers with long form factors: a 21 MB snapshot, which every build would refuse."""
    pad = "x" * 100
    rows = "".join(f"m{index:06d},RTX 4090,2,0.45,US,{pad},{pad}\n" for index in range(66_000))
    assert refused("export.csv", HEADER + rows) == [
        f"{WRITTEN}: the snapshot would be 21,450,203 bytes, larger than the 20,000,000 a build reads; nothing was written"
    ]


# The command line: exit code 1 and the messages, never a traceback


def run_import(root: Path, *arguments: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "gpumem", "--project", str(REPO), "prices", "import", "--catalogs", "catalogs", *arguments]
    return subprocess.run(command, cwd=root, capture_output=True, text=True)


def test_cli_reports_attacks_with_exit_code_1(root):
    before = listing()
    Path("cells.csv").write_text("machine_id,gpu,gpus,price_per_gpu_hour,country\nm1,RTX 4090,2,1,85,US\n")
    failed = run_import(root, "--taken-at", TIME, "cells.csv")
    assert (failed.returncode, failed.stdout) == (1, "")
    assert failed.stderr == (
        "cells.csv:2: m1: cells: expected 5 cells as in the header, found 6; "
        "quote a value that holds a comma, and write prices with a decimal point\n"
        "1 problem found; nothing was written.\n"
    )
    Path("binary.csv").write_bytes(b"\xff\xfe" + HEADER.encode("utf-16-le"))
    failed = run_import(root, "--taken-at", "9999-12-31T23:59:59-23:59", "binary.csv")
    assert (failed.returncode, failed.stderr) == (
        1,
        "binary.csv: not UTF-8 text (invalid byte 0xff at offset 0, line 1); save the export as UTF-8\n"
        "1 problem found; nothing was written.\n",
    )
    Path("deep.json").write_text("[" * 100_000)
    failed = run_import(root, "deep.json")
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert listing() == before
