"""What a student's browser does on the course's JupyterHub, done with HTTP: log in, follow the
nbgitpuller link, run code in a kernel of their server. Used by tests/test_hub.py.

Everything goes through the hub's public address (its proxy), as a student's traffic does.
"""

import json
import re
import time
import urllib.parse
import uuid

import requests
import websocket


class Student:
    """One student's browser session on the hub: the hub's login cookie, then their server's token."""

    def __init__(self, base_url, name, password):
        self.base_url, self.name = base_url, name
        self.session = requests.Session()
        self.session.get(f"{base_url}/hub/login", timeout=30)  # sets the _xsrf cookie the login form needs
        response = self.session.post(
            f"{base_url}/hub/login",
            data={"username": name, "password": password, "_xsrf": self.session.cookies.get("_xsrf")},
            allow_redirects=False,
            timeout=30,
        )
        if response.status_code != 302 or "jupyterhub-session-id" not in self.session.cookies:
            raise AssertionError(f"{name} could not log in: HTTP {response.status_code}")
        self.token = None  # their server's API token, read from the nbgitpuller page

    def open_link(self, link, wait_s):
        """Open an nbgitpuller link: the hub starts the server (waiting up to wait_s), then nbgitpuller's page."""
        deadline = time.monotonic() + wait_s
        while True:
            page = self.session.get(link, timeout=60)
            if page.url.split("?")[0].endswith(f"/user/{self.name}/git-pull"):
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}'s server did not start within {wait_s} s (last page {page.url})")
            time.sleep(0.25)  # the spawn-pending page: JupyterHub is still starting the server
        found = re.search(r'data-jupyter-api-token="(\w+)"', page.text)
        if found is None:
            raise AssertionError(f"nbgitpuller's page for {self.name} carries no API token")
        self.token = found.group(1)
        return page

    def pull(self, repo, branch):
        """What nbgitpuller's page does in the browser: call its API and read the event stream to the end."""
        query = urllib.parse.urlencode({"repo": repo, "branch": branch})
        url = f"{self.base_url}/user/{self.name}/git-pull/api?{query}"
        events = []
        with self.session.get(url, headers=self.auth, stream=True, timeout=300) as stream:
            stream.raise_for_status()
            for line in stream.iter_lines():
                if line.startswith(b"data:"):
                    events.append(json.loads(line[5:]))
        if not events or events[-1].get("phase") != "finished":
            raise AssertionError(f"nbgitpuller did not finish for {self.name}: {events[-3:]}")
        return events

    @property
    def auth(self):
        return {"Authorization": f"token {self.token}"}

    def api(self, method, path, user=None, **kwargs):
        """A request to a user's server (`user`, default this student's own) with this student's credentials."""
        url = f"{self.base_url}/user/{user or self.name}/api/{path}"
        return self.session.request(method, url, headers=self.auth, timeout=60, allow_redirects=False, **kwargs)

    def kernel(self):
        response = self.api("POST", "kernels", json={"name": "python3"})
        response.raise_for_status()
        return Kernel(self, response.json()["id"])


class Kernel:
    """A kernel of a student's server, driven over its websocket (Jupyter's JSON messages) through the proxy."""

    def __init__(self, student, kernel_id):
        self.student, self.id = student, kernel_id
        ws_url = student.base_url.replace("http", "ws", 1)
        self.socket = websocket.create_connection(
            f"{ws_url}/user/{student.name}/api/kernels/{kernel_id}/channels",
            header=[f"Authorization: token {student.token}"],
            timeout=600,
        )
        self.session_id = uuid.uuid4().hex

    def execute(self, code, timeout_s=300):
        """Run `code`; return (text of its outputs, the error as 'Name: value' or None)."""
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "username": self.student.name,
            "session": self.session_id,
            "msg_type": "execute_request",
            "version": "5.3",
        }
        content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False}
        message = {"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": "shell"}
        self.socket.send(json.dumps(message))
        texts, error, replied, idle = [], None, False, False
        deadline = time.monotonic() + timeout_s
        while not (replied and idle):
            if time.monotonic() > deadline:
                raise AssertionError(f"a cell did not finish within {timeout_s} s: {code[:80]!r}")
            reply = _message(self.socket.recv())
            if reply.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, body = reply["msg_type"], reply["content"]
            if kind == "stream":
                texts.append(body["text"])
            elif kind in ("execute_result", "display_data"):
                texts.append(body["data"].get("text/plain", ""))
            elif kind == "error":
                error = f"{body['ename']}: {body['evalue']}"
            elif kind == "execute_reply":
                replied = True
            elif kind == "status" and body["execution_state"] == "idle":
                idle = True
        return "".join(texts), error

    def close(self):
        self.socket.close()
        self.student.api("DELETE", f"kernels/{self.id}")


def _message(frame):
    """A kernel message from a websocket frame: JSON text, or (with binary buffers, e.g. a widget's PNG)
    Jupyter's binary frame: a count n, n offsets (big-endian uint32), the JSON message first."""
    if isinstance(frame, str):
        return json.loads(frame)
    count = int.from_bytes(frame[:4], "big")
    offsets = [int.from_bytes(frame[4 + 4 * i : 8 + 4 * i], "big") for i in range(count)]
    end = offsets[1] if count > 1 else len(frame)
    return json.loads(frame[offsets[0] : end])
