#!/usr/bin/python3
"""The HTTP server the remote-file tests (tests/test_http.c) run on 127.0.0.1: Python's
standard library only, started and stopped by the tests.

    http_server.py --root DIR --port-file F [--log F] [--tls CERT KEY]

Listens on 127.0.0.1 on a port the kernel chooses, and writes that port to F (whole, by a
rename) once listening. With --tls it speaks HTTPS with CERT and KEY, and plain HTTP on the same
port to a client that does not start a TLS handshake (so that a redirect from https:// to
http:// on one host and port can be followed). Every request appends a JSON line to the log:
method, path, host, range, authorization (or null), tls (whether it came over TLS), status, the
body bytes actually written (a client that hangs up part-way is logged with what reached the
socket until then), and start and end (seconds on the server's monotonic clock). SIGTERM stops it, and so does the death of the process that started
it.

Routes (NAME may hold slashes; no component may be "." or ".."):
  /files/NAME          ROOT/NAME with Range: bytes=a-b, a-, -n -> 206 and Content-Range;
                       none -> 200; unsatisfiable -> 416; ETag, Last-Modified, Accept-Ranges;
                       HEAD too
  /norange/NAME        the same file, Range ignored: always 200 and the whole body
  /redirect/NAME       302 to /files/NAME
  /redirect-host/NAME  302 to /files/NAME on the other loopback name (localhost <-> 127.0.0.1)
  /redirect-plain/NAME 302 to http:// (plain, whatever the request came over) on the same host
                       and port, /files/NAME
  /OWNER/REPO/resolve/REV/FILE
                       302 to /cdn/OWNER/REPO/REV/FILE, as the Hugging Face Hub redirects to
                       its CDN; a REPO starting "private" wants "Authorization: Bearer TOKEN"
                       (TOKEN: the file ROOT/hf/token) here: none -> 401, another -> 403;
                       with the Hub's X-Repo-Commit, X-Linked-Etag (the SHA-256) and
                       X-Linked-Size (see hub_headers);
                       a REPO starting "elsewhere" is redirected to the CDN on the other
                       loopback name (localhost <-> 127.0.0.1), where the token must not go
  /cdn/OWNER/REPO/REV/FILE
                       ROOT/hf/OWNER/REPO/REV/FILE, served as /files/ serves
  /flaky/NAME          503 the first time NAME is asked for, then as /files/
  /swap/NAME           ROOT/NAME the first time, ROOT/NAME.swapped every later time
  /short-total/NAME    as /files/, but every Content-Range claims a total 1000 bytes short of
                       the file's size, even for bytes past it
  /long-header/NAME    as /files/, with a 200,000-byte header line
  /drip/NAME           as /files/ for a range from byte 0; any other range is answered, after
                       50 ms, with its first byte only (a valid 206 for bytes a-a)
  /trickle/NAME        as /files/, the body sent at about 1,100 bytes a second (just above
                       libcurl's stall rate)
  /silent/NAME         reads the request and answers nothing until the client hangs up
  /delay/NAME          as /files/, each answer begun after 200 ms (requests at once overlap)
  /_quiet              (not logged) answers once no other request is in progress, so that a
                       test reads a complete log
  anything else        404
"""

import argparse
import email.utils
import hashlib
import http.server
import json
import os
import select
import signal
import socket
import socketserver
import ssl
import sys
import threading
import time
import urllib.parse

PIECE = 64 * 1024


class State:
    def __init__(self, root, log_path):
        self.root = os.path.realpath(root)
        self.log = open(log_path, "a", encoding="utf-8") if log_path else None
        self.lock = threading.Lock()
        self.idle = threading.Condition(self.lock)
        self.busy = 0
        self.seen = {}  # route -> NAME -> requests so far (flaky, swap)

    def count(self, route, name):
        with self.lock:
            per = self.seen.setdefault(route, {})
            per[name] = per.get(name, 0) + 1
            return per[name]

    def enter(self):
        with self.lock:
            self.busy += 1

    def leave(self, record):
        with self.lock:
            if self.log and record is not None:
                self.log.write(json.dumps(record) + "\n")
                self.log.flush()
            self.busy -= 1
            self.idle.notify_all()

    def wait_idle(self, seconds):
        with self.lock:
            return self.idle.wait_for(lambda: self.busy == 0, timeout=seconds)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "tensormap-test/1"
    sys_version = ""

    def log_message(self, format, *args):  # the JSON log is the record
        pass

    # ---- the request's record --------------------------------------------------------------

    def do_GET(self):
        self.dispatch(body=True)

    def do_HEAD(self):
        self.dispatch(body=False)

    def dispatch(self, body):
        state = self.server.state
        path = urllib.parse.urlsplit(self.path).path
        self.sent = 0
        self.status = None
        if path == "/_quiet":
            done = state.wait_idle(30)
            self.small(200 if done else 503, b"quiet\n" if done else b"busy\n", body)
            return
        state.enter()
        start = time.monotonic()
        record = None
        try:
            self.route(path, body)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True  # the client hung up: what reached it is logged
        finally:
            record = {
                "method": self.command,
                "path": self.path,
                "host": self.headers.get("Host"),
                "range": self.headers.get("Range"),
                "authorization": self.headers.get("Authorization"),
                "tls": isinstance(self.connection, ssl.SSLSocket),
                "status": self.status,
                "bytes": self.sent,
                "start": start,
                "end": time.monotonic(),
            }
            state.leave(record)

    # ---- responses -------------------------------------------------------------------------

    def begin(self, status, headers):
        self.status = status
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()

    def write(self, data):
        self.wfile.write(data)
        self.sent += len(data)

    def small(self, status, text, body, extra=()):
        self.begin(status, [("Content-Type", "text/plain"), ("Content-Length", str(len(text)))]
                   + list(extra))
        if body:
            self.write(text)

    def not_found(self, body):
        self.small(404, b"not found\n", body)

    def redirect(self, location, body):
        self.small(302, b"redirect\n", body, [("Location", location)])

    # ---- routes ----------------------------------------------------------------------------

    def route(self, path, body):
        parts = [urllib.parse.unquote(p) for p in path.split("/")[1:]]
        if not parts or any(p in ("", ".", "..") or "\0" in p for p in parts):
            return self.not_found(body)
        head, rest = parts[0], parts[1:]
        name = "/".join(rest)
        state = self.server.state
        if head == "files" and rest:
            return self.serve(os.path.join(state.root, name), body, ranges=True)
        if head == "norange" and rest:
            return self.serve(os.path.join(state.root, name), body, ranges=False)
        if head == "redirect" and rest:
            return self.redirect("/files/" + quote(name), body)
        if head == "redirect-plain" and rest:
            return self.redirect("http://%s/files/%s" % (self.headers.get("Host"), quote(name)),
                                 body)
        if head == "redirect-host" and rest:
            other, port = self.other_host()
            scheme = "https" if self.server.tls else "http"
            return self.redirect("%s://%s:%s/files/%s" % (scheme, other, port, quote(name)), body)
        if head == "flaky" and rest:
            if state.count("flaky", name) == 1:
                return self.small(503, b"try again\n", body, [("Retry-After", "0")])
            return self.serve(os.path.join(state.root, name), body, ranges=True)
        if head == "swap" and rest:
            suffix = "" if state.count("swap", name) == 1 else ".swapped"
            return self.serve(os.path.join(state.root, name + suffix), body, ranges=True)
        if head == "short-total" and rest:
            return self.serve(os.path.join(state.root, name), body, ranges=True, short_total=1000)
        if head == "long-header" and rest:
            return self.serve(os.path.join(state.root, name), body, ranges=True,
                              extra_headers=[("X-Padding", "a" * 200000)])
        if head == "drip" and rest:
            return self.serve(os.path.join(state.root, name), body, ranges=True, drip=True)
        if head == "trickle" and rest:
            return self.serve(os.path.join(state.root, name), body, ranges=True, rate=1100)
        if head == "delay" and rest:
            threading.Event().wait(0.2)
            return self.serve(os.path.join(state.root, name), body, ranges=True)
        if head == "silent" and rest:
            return self.wait_for_hangup()
        if head == "cdn" and len(rest) >= 4:
            return self.serve(os.path.join(state.root, "hf", *rest), body, ranges=True)
        if len(parts) >= 5 and parts[2] == "resolve":
            owner, repo, rev, file = parts[0], parts[1], parts[3], "/".join(parts[4:])
            if repo.startswith("private"):
                try:
                    with open(os.path.join(state.root, "hf", "token"), encoding="utf-8") as f:
                        token = f.read().strip()
                except OSError:
                    token = None
                auth = self.headers.get("Authorization")
                if auth is None:
                    return self.small(401, b"authentication required\n", body,
                                      [("WWW-Authenticate", 'Bearer realm="test"')])
                if token is None or auth != "Bearer " + token:
                    return self.small(403, b"forbidden\n", body)
            local = os.path.join(state.root, "hf", owner, repo, rev, file)
            if not os.path.isfile(local):
                return self.not_found(body)
            cdn = "/cdn/%s/%s/%s/%s" % (quote(owner), quote(repo), quote(rev, ""), quote(file))
            if repo.startswith("elsewhere"):  # a CDN on another host: the token must stay
                cdn = "%s://%s:%s%s" % ("https" if self.server.tls else "http",
                                        self.other_host()[0], self.other_host()[1], cdn)
            return self.small(302, b"redirect\n", body,
                              [("Location", cdn)] + hub_headers(state.root, owner, repo, rev,
                                                                 local))
        return self.not_found(body)

    def other_host(self):
        """The other loopback name than the request's Host, and the port."""
        host = (self.headers.get("Host") or "").rpartition(":")[0]
        return ("localhost" if host == "127.0.0.1" else "127.0.0.1", self.server.server_address[1])

    def wait_for_hangup(self):
        self.close_connection = True
        sock = self.connection
        while True:
            readable, _, _ = select.select([sock], [], [], 0.1)
            if readable and not sock.recv(1, socket.MSG_PEEK):
                return

    def serve(self, path, body, ranges, short_total=0, extra_headers=(), drip=False, rate=0):
        try:
            f = open(path, "rb")
        except OSError:
            return self.not_found(body)
        with f:
            st = os.fstat(f.fileno())
            if not os.path.isfile(path):
                return self.not_found(body)
            size = st.st_size
            common = [
                ("ETag", '"%x-%x-%x"' % (size, st.st_mtime_ns, st.st_ino)),
                ("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True)),
                ("Content-Type", "application/octet-stream"),
            ] + list(extra_headers)
            if ranges:
                common.append(("Accept-Ranges", "bytes"))
            want = parse_range(self.headers.get("Range"), size) if ranges else None
            if want == "unsatisfiable":
                return self.small(416, b"range not satisfiable\n", body,
                                  [h for h in common if h[0] != "Content-Type"]
                                  + [("Content-Range", "bytes */%d" % size)])
            if want is None:
                first, last, status, extra = 0, size - 1, 200, []
            else:
                first, last = want
                if drip and first != 0:
                    last = first
                    threading.Event().wait(0.05)
                status = 206
                extra = [("Content-Range", "bytes %d-%d/%d" % (first, last, size - short_total))]
            length = last - first + 1
            self.begin(status, common + extra + [("Content-Length", str(length))])
            if not body:
                return
            f.seek(first)
            left = length
            piece = rate // 10 if rate else PIECE  # at a rate: a tenth of it every 0.1 s
            while left > 0:
                data = f.read(min(piece, left))
                if not data:  # the file shrank under us: the connection cannot go on
                    self.close_connection = True
                    return
                self.write(data)
                self.wfile.flush()
                left -= len(data)
                if rate:
                    threading.Event().wait(0.1)


def hub_headers(root, owner, repo, rev, local):
    """What the Hub says of an LFS file on its resolve answer: the commit the revision is at
    (ROOT/hf/OWNER/REPO/REV.commit when there, else a hash of the names), the file's SHA-256
    as X-Linked-Etag (LOCAL.sha256 when there: a test's lie) and its size."""
    def read(path):
        try:
            with open(path, encoding="utf-8") as f:
                return f.read().strip()
        except OSError:
            return None
    commit = read(os.path.join(root, "hf", owner, repo, rev + ".commit")) or \
        hashlib.sha1(("%s/%s@%s" % (owner, repo, rev)).encode()).hexdigest()
    sha = read(local + ".sha256")
    if sha is None:
        with open(local, "rb") as f:
            sha = hashlib.file_digest(f, "sha256").hexdigest()
    return [("X-Repo-Commit", commit), ("X-Linked-Etag", '"%s"' % sha), ("ETag", '"%s"' % sha),
            ("X-Linked-Size", str(os.path.getsize(local)))]


def quote(s, safe="/"):
    return urllib.parse.quote(s, safe=safe)


def parse_range(value, size):
    """(first, last) for a single satisfiable range, "unsatisfiable", or None to ignore it (no
    Range, another unit, several ranges or a syntax error: RFC 9110 says serve the whole)."""
    if not value:
        return None
    unit, _, spec = value.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    a, dash, b = spec.strip().partition("-")
    if not dash or (a and not a.isdigit()) or (b and not b.isdigit()) or (not a and not b):
        return None
    if not a:  # the last n bytes
        n = int(b)
        if n == 0 or size == 0:
            return "unsatisfiable"
        return (max(0, size - n), size - 1)
    first = int(a)
    if b and int(b) < first:
        return None
    if first >= size:  # a range that starts past the end cannot be satisfied
        return "unsatisfiable"
    last = int(b) if b else size - 1
    return (first, min(last, size - 1))


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, state, tls_context):
        self.state = state
        self.tls = tls_context
        super().__init__(("127.0.0.1", 0), Handler)

    def finish_request(self, request, client_address):
        # the TLS handshake happens here, on the request's own thread; a connection that does
        # not open with a TLS record (0x16, a handshake) is served as plain HTTP
        if self.tls is not None:
            try:
                if request.recv(1, socket.MSG_PEEK) == b"\x16":
                    request = self.tls.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return  # e.g. a client that refused the certificate
        super().finish_request(request, client_address)

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError, ssl.SSLError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    a = p.parse_args()
    ctx = None
    if a.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls[0], a.tls[1])
    server = Server(State(a.root, a.log), ctx)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    # A test process that dies without stopping its server must not leave it running.
    parent = os.getppid()

    def watch_parent():
        while os.getppid() == parent:
            threading.Event().wait(0.5)
        stop(None, None)

    threading.Thread(target=watch_parent, daemon=True).start()
    signal.signal(signal.SIGINT, stop)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.replace(tmp, a.port_file)
    try:
        server.serve_forever(poll_interval=0.05)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
