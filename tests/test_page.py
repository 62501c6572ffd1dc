"""watch --page's server and its data: it listens on loopback only, streams a document after each save, keeps the
last view of a broken save beside the command line's error, draws a context the page asks for, escapes text from
the file, and stops on Ctrl-C with exit code 130. The page in a browser: tests/test_page_browser.py."""

import http.client
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading

import pytest
from test_cli import invoke
from waiting import DEADLINE, wait_until

from handwired.cli import page as serving
from handwired.views import page as paging
from handwired.views import watch as watching
from handwired.weightfile.axes import CONTROL


def save(path, doc):
    """Save ``doc`` as an editor does, whole: a new file put in place (a new inode, so every save is seen)."""
    fresh = path.with_name(path.name + ".new")
    fresh.write_text(json.dumps(doc), encoding="utf-8")
    os.replace(fresh, path)
    return path


def read_line(process: subprocess.Popen) -> str:
    """The next line the process prints on stdout (a safety-net deadline, never a timing)."""
    ready, _, _ = select.select([process.stdout], [], [], DEADLINE)
    assert ready, f"the process printed nothing in {DEADLINE:.0f} s"
    return process.stdout.readline()


def q00(document: dict):
    """Q at position 0, q0 in a page document: by the file, the constant Lg (x[0] = p0 + a, c_attn.w[p0, q0] = Lg)."""
    step = next(step for step in document["view"]["steps"] if step["key"] == "qkv")
    matrix = next(m for m in step["matrices"] if m["title"] == "Q")
    assert matrix["rows"][0] == "0:a" and matrix["cols"][0] == "q0"
    return matrix["values"][0][0]


def uses(doc, name: str) -> int:
    """How many entries of the document are written with ``name`` ("Lg", "-Lg")."""
    if isinstance(doc, dict):
        return sum(uses(value, name) for key, value in doc.items() if key != "constants")
    if isinstance(doc, list):
        return sum(uses(value, name) for value in doc)
    return int(isinstance(doc, str) and name in doc)


class Served:
    """A watcher of ``path`` on a thread, its board served on loopback: what the command runs, in this process."""

    def __init__(self, path, text=None):
        self.board = serving.Board()
        self.server = serving.serve(self.board)
        self.stop = threading.Event()
        load = lambda asked: watching.load_snapshot(path, asked if asked is not None else text)  # noqa: E731
        self.watcher = serving.Watcher(path, load, self.board)
        self.thread = threading.Thread(target=self.watcher.run, args=(self.stop,), daemon=True)
        self.thread.start()
        self.port = self.server.server_address[1]

    def connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=DEADLINE)

    def get(self, where: str, **headers) -> tuple[int, bytes]:
        connection = self.connect()
        connection.request("GET", where, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()

    def post(self, where: str, body: dict, **headers) -> int:
        connection = self.connect()
        connection.request("POST", where, json.dumps(body), {"Content-Type": "application/json", **headers})
        return connection.getresponse().status

    def close(self):
        self.stop.set()
        serving.stop(self.server, self.board)
        self.thread.join(DEADLINE)


@pytest.fixture
def served(tmp_path, aab_doc):
    made = []

    def start(doc=None, text=None) -> Served:
        made.append(Served(save(tmp_path / "aab.json", doc or aab_doc), text))
        return made[-1]

    yield start
    for one in made:
        one.close()


class Events:
    """The page's event stream, read as the browser reads it: each event's id and data."""

    def __init__(self, served: Served, after: int = 0):
        self.connection = served.connect()
        self.connection.request("GET", f"/events?after={after}")
        self.response = self.connection.getresponse()
        assert self.response.status == 200 and self.response.getheader("Content-Type") == "text/event-stream"

    def next(self) -> dict:
        fields: dict[str, str] = {}
        while True:
            line = self.response.fp.readline().decode("utf-8")
            assert line, "the stream ended"
            if line == "\n" and "data" in fields:
                return {"id": int(fields["id"]), **json.loads(fields["data"])}
            if line.strip() and not line.startswith(":"):
                name, _, value = line.rstrip("\n").partition(": ")
                fields[name] = value

    def close(self):
        self.connection.close()


# ---------------------------------------------------------------- loopback only


def other_addresses() -> list[str]:
    """This machine's IPv4 addresses that are not loopback: the one its default route leaves from, and its name's."""
    found = set()
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # a documentation address: a UDP connect only picks the route, sends nothing
        found.add(probe.getsockname()[0])
    except OSError:
        pass
    finally:
        probe.close()
    try:
        found |= set(socket.gethostbyname_ex(socket.gethostname())[2])
    except OSError:
        pass
    return sorted(address for address in found if not address.startswith("127."))


def test_the_server_listens_on_loopback_only(served):
    page = served()
    assert page.server.socket.getsockname()[0] == "127.0.0.1"
    assert serving.url(page.server) == f"http://127.0.0.1:{page.port}/"
    assert page.get("/")[0] == 200  # the probe is real: the port answers on loopback
    for address in ("127.0.0.2", *other_addresses()):  # another loopback address, and this machine's own
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((address, page.port), timeout=DEADLINE).close()
    if not other_addresses():
        pytest.skip("this machine has no address but loopback: only 127.0.0.2 was tried")


def test_a_request_in_another_sites_name_is_refused(served):
    page = served()
    wait_until(lambda: page.board.version, "the first load")
    assert page.get("/view", Host="attacker.example")[0] == 403  # a name rebound to 127.0.0.1 (DNS rebinding)
    assert page.get("/view", Host=f"localhost:{page.port}")[0] == 200
    assert page.post("/context", {"text": "ab"}, Origin="http://attacker.example") == 403
    assert page.board.asked is None


def test_the_page_is_whole_offline_and_names_nothing_elsewhere(served):
    page = served()
    wait_until(lambda: page.board.version, "the first load")
    status, html = page.get("/")
    assert status == 200 and b"{{document}}" not in html
    for name in ("page.css", "page.js"):
        assert page.get(f"/{name}")[0] == 200
        assert b"http" not in paging.asset(name).encode()  # nothing fetched from anywhere
    assert b"http" not in html.replace(b"http-equiv", b"")
    start = html.index(b'type="application/json">') + len(b'type="application/json">')
    embedded = json.loads(html[start:html.index(b"</script>", start)])  # the first view, drawn as the page loads
    assert q00(embedded) == 1024 and embedded["version"] == page.board.version


# ---------------------------------------------------------------- the stream


def test_the_stream_sends_a_document_after_each_save(served, tmp_path, aab_doc):
    page = served()
    events = Events(page)
    try:
        first = events.next()
        assert first["id"] == 1 and q00(first) == 1024 and first["error"] is None
        aab_doc["constants"]["Lg"] = 777
        save(tmp_path / "aab.json", aab_doc)
        second = events.next()
        assert second["id"] == 2 and q00(second) == 777
        step = next(step for step in second["view"]["steps"] if step["key"] == "qkv")
        q = step["matrices"][0]
        assert q["changed"][0][0] is True and q["changed"][0][1] is False  # Q[0, q1] = 0 both times
        changes = second["view"]["edits"]["changes"]
        assert len(changes) == uses(aab_doc, "Lg") == 12  # each entry written with Lg in the file
        assert {(c["old"], c["new"], c["new_text"]) for c in changes} == {(1024, 777, "777"), (-1024, -777, "-777")}
        assert changes[0]["label"] == "blocks[0].attn.c_attn.w.p0.q0"
    finally:
        events.close()
    resumed = Events(page, after=1)  # a page that has the first document gets the newer one at once
    try:
        assert resumed.next()["id"] == 2
    finally:
        resumed.close()


def test_a_broken_save_keeps_the_last_view_and_sends_the_command_lines_error(served, tmp_path, aab_doc):
    page = served()
    events = Events(page)
    try:
        assert q00(events.next()) == 1024
        path = tmp_path / "aab.json"
        path.write_text('{"format": "handwired/1", ', encoding="utf-8")
        broken = events.next()
        line = invoke("check", str(path)).stderr.strip()
        assert line.startswith("error: ")
        assert broken["error"]["lines"] == [line.removeprefix("error: ")]  # the same one line as the command's
        assert "Showing the last version that loaded" in broken["error"]["after"]
        assert q00(broken) == 1024  # the last good view, still there
        aab_doc["constants"]["Lg"] = 5
        save(path, aab_doc)
        mended = events.next()
        assert mended["error"] is None and q00(mended) == 5
    finally:
        events.close()


def test_the_page_asks_for_a_context_and_a_bad_one_is_refused_keeping_the_view(served, tmp_path):
    page = served()
    predicted = json.loads(invoke("predict", "abab", "-w", str(tmp_path / "aab.json"), "--every-position",
                                  "--json").stdout)["positions"]
    events = Events(page)
    try:
        assert events.next()["view"]["context"]["window"] == "aabaa"
        assert page.post("/context", {"text": "abab"}) == 204
        drawn = events.next()["view"]
        shown = next(s for s in drawn["steps"] if s["key"] == "prediction")["predictions"]
        assert drawn["context"]["window"] == "abab"
        assert [p["token"] for p in shown] == [p["prediction"] for p in predicted]
        assert page.post("/context", {"text": "abz"}) == 204
        refused = events.next()
        assert refused["refused"]["text"] == "abz" and "'z'" in refused["refused"]["lines"][0]
        assert refused["view"]["context"]["window"] == "abab" and refused["error"] is None
        assert page.post("/context", {"text": None}) == 204  # back to the file's example
        assert events.next()["view"]["context"]["window"] == "aabaa"
        assert page.post("/context", {"text": 3}) == 400
    finally:
        events.close()


# ---------------------------------------------------------------- the data


def test_text_from_the_file_reaches_the_page_escaped(tmp_path, aab_doc):
    aab_doc["dims"][7] = "o\u202eut\x1b[2J"  # a bidi override and a terminal escape in a label
    snapshot = watching.load_snapshot(save(tmp_path / "aab.json", aab_doc))
    assert snapshot.ok, snapshot.errors
    document = json.dumps(paging.document(watching.State(snapshot)), ensure_ascii=False)
    assert not CONTROL.search(document)
    assert "o\\\\u202eut\\\\x1b[2J" in document  # shown as its escapes, as the terminal shows it


def test_a_matrix_keeps_its_exact_values_beside_the_printed_text():
    import numpy as np

    from handwired.views.figures import Matrix

    values = np.array([[0.1 + 0.2, -np.inf], [0.0, 2.0]])
    data = paging.matrix_json(Matrix("m", "hook", values, ("r0", "r1"), ("c0", "c1"), "row", "col"))
    assert data["values"] == [[0.30000000000000004, "−∞"], [0.0, 2.0]]
    assert data["texts"] == [["0.300", "−∞"], ["0", "2.000"]]
    assert data["kept_rows"] == [0, 1] and data["kept_cols"] == [0, 1] and data["scale"] == 2.0


# ---------------------------------------------------------------- the command


def test_ctrl_c_stops_the_page_with_exit_code_130(tmp_path, aab_doc):
    path = save(tmp_path / "aab.json", aab_doc)
    process = subprocess.Popen([sys.executable, "-m", "handwired", "watch", str(path), "--page"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = read_line(process)
        port = int(first.split("http://127.0.0.1:")[1].split("/")[0])
        assert "PASS" in read_line(process)  # the verdict of the first load
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=DEADLINE) == 130
        assert "Traceback" not in process.stderr.read()
        with pytest.raises(ConnectionRefusedError):  # the port is closed
            socket.create_connection(("127.0.0.1", port), timeout=DEADLINE).close()
    finally:
        if process.poll() is None:
            process.kill()


def test_open_and_port_belong_to_the_page(tmp_path, aab_doc):
    path = save(tmp_path / "aab.json", aab_doc)
    result = invoke("watch", str(path), "--open")
    assert result.exit_code == 2 and "--open is for the page: add --page" in result.stderr


def test_all_starts_the_page_with_every_row_and_column_and_documents_are_numbered():
    board = serving.Board(everything=True)
    assert board.after(0, 0) is None  # nothing published yet
    assert board.publish({"view": None}) == 1 and board.publish({"view": None}) == 2
    version, body = board.latest()
    assert version == 2 and json.loads(body) == {"view": None, "version": 2, "everything": True}
    assert board.after(1, DEADLINE) == (2, body)  # newer than what the page has: at once
