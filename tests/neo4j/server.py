"""A real Neo4j Community server for the tests, started from Maven Central jars: no Docker, no tarball, no install.

Why this design:

* **Jars from Maven Central, cached in ``~/.m2``.** ``org.neo4j:neo4j`` (plus ``neo4j-bolt``, which it already pulls in)
  is the whole Community server as a library; Maven is the ordinary client for Central and caches what it fetched,
  so only the first run on a machine downloads (~125-150 MB, seconds on a fast link).
* **The classpath comes from** ``mvn dependency:build-classpath`` on ``tests/neo4j/pom.xml`` with ``-Dneo4j.version=V``,
  written once per version to ``$XDG_CACHE_HOME/agentx-memory/neo4j/<version>.classpath`` (default ``~/.cache``) and
  reused while every jar it lists still exists; a file lock keeps concurrent test processes from fetching twice.
* **A single-file Java program** (``Launcher.java``, run in source-file mode: no build step, no compiled artifacts to
  keep in sync) embeds a ``DatabaseManagementService`` with Bolt on 127.0.0.1, auth off, no HTTP and a small page
  cache, and prints ``AGENTX-NEO4J-READY bolt://127.0.0.1:<port> <version>`` once the default database is available.
* **No orphans.** The launcher exits (shutting Neo4j down cleanly) on SIGTERM and when its stdin reaches EOF. Its stdin
  is a pipe this process holds open and never writes to, so when this process dies, even by SIGKILL, the kernel closes
  the pipe and the server stops by itself within a few seconds.
* **Each server is fresh**: a new temp home directory (removed by ``stop``) and a free loopback port, so parallel test
  sessions do not collide.

Neo4j 5.26 (LTS) runs on Java 17 or 21; Neo4j 2025.x/2026.x need Java 21+. ``missing_tools`` and ``start_neo4j``
look for a suitable JDK (a JDK, not a JRE: source-file mode needs the compiler) in ``$JAVA_HOME``, ``java`` on
``PATH`` and ``/usr/lib/jvm/*``.

Run by hand: ``python tests/neo4j/server.py [version]`` prints the URI and serves until Ctrl-C.
"""

from __future__ import annotations

import collections
import contextlib
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from functools import cache
from pathlib import Path

from agentx_memory.polling import WaitTimeoutError, wait_until

DEFAULT_VERSION = "5.26.30"
"""The Neo4j started when none is asked for: the newest 5.26 LTS patch on Maven Central when this was written."""

VERSION_ENV = "AGENTX_TEST_NEO4J_VERSION"
"""The environment variable callers (the test fixture, ``__main__``) read to pick another version; not read here."""

HEAP_ENV = "AGENTX_TEST_NEO4J_HEAP"
"""The environment variable naming the JVM's maximum heap (``-Xmx``, e.g. ``8g`` for ``bench scale`` at 1M turns);
1g when unset, enough for the test suite and 100k turns."""

READY_PREFIX = "AGENTX-NEO4J-READY"
"""The start of the one line ``Launcher.java`` prints on stdout when the server is ready."""

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
LAUNCHER = HERE / "Launcher.java"

# Mostly what Neo4j's own start scripts pass; without the --add-opens the page cache falls back to a slower mode and
# debug.log fills with warnings.
_JVM_FLAGS = [
    "-Xmx1g",
    "-Xms256m",
    "-XX:+UseSerialGC",  # a test server on a small machine: fewer GC threads, less memory than G1
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dlog4j2.disable.jmx=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
]


def _min_java(version: str) -> int:
    """The oldest Java major version that Neo4j version runs on: 17 for 5.x, 21 for the 2025+ calendar versions."""
    major = int(version.split(".", 1)[0])
    return 21 if major >= 2025 else 17


def _max_supported_java(version: str) -> int | None:
    """The newest Java major version Neo4j supports for that version (None: no known upper bound)."""
    return 21 if _min_java(version) == 17 else None


def _check_version(version: str) -> str:
    """``version`` when it looks like a Neo4j version (``5.26.30``, ``2026.08.1``), else ValueError."""
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", version) or int(version.split(".")[0]) < 5:
        raise ValueError(f"not a supported Neo4j version: {version!r} (expected e.g. 5.26.30 or 2026.08.1)")
    return version


@cache
def _java_major(java: str) -> int | None:
    """The major version of the ``java`` binary at that path, or None when it does not run."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def _java_candidates() -> list[str]:
    """Every distinct ``java`` of a JDK on this machine: ``$JAVA_HOME``, then ``PATH``, then ``/usr/lib/jvm/*``."""
    found: list[str] = []
    java_home = os.environ.get("JAVA_HOME")
    paths = [os.path.join(java_home, "bin", "java")] if java_home else []
    paths.append(shutil.which("java") or "")
    paths += sorted(glob.glob("/usr/lib/jvm/*/bin/java"))
    for path in paths:
        real = os.path.realpath(path) if path else ""
        # Source-file mode needs the jdk.compiler module, which a JRE lacks; javac beside java marks a JDK.
        is_jdk = real and os.access(real, os.X_OK) and os.path.exists(os.path.join(os.path.dirname(real), "javac"))
        if is_jdk and real not in found:
            found.append(real)
    return found


def _find_java(version: str) -> str | None:
    """The ``java`` to run that Neo4j version with: the first JDK in a supported range, else the first new enough."""
    low, high = _min_java(version), _max_supported_java(version)
    usable = [(java, major) for java in _java_candidates() if (major := _java_major(java)) and major >= low]
    for java, major in usable:
        if high is None or major <= high:
            return java
    return usable[0][0] if usable else None


def missing_tools(version: str) -> str | None:
    """None when this machine can start that Neo4j version, else a human reason that says what to install.

    Needs a JDK (not only a JRE) of Java 17+ for Neo4j 5.x or 21+ for 2025.x/2026.x, found in ``$JAVA_HOME``, on
    ``PATH`` or under ``/usr/lib/jvm``, and Maven (``mvn``) on ``PATH`` to fetch the jars from Maven Central.
    """
    _check_version(version)
    problems = []
    if _find_java(version) is None:
        need = _min_java(version)
        problems.append(
            f"a JDK {need}+ (Neo4j {version} needs Java {need}+): e.g. apt-get install openjdk-{need}-jdk-headless "
            "where the distribution has it, or a Temurin JDK, or point JAVA_HOME at one"
        )
    if shutil.which("mvn") is None:
        problems.append("Maven to fetch Neo4j's jars from Maven Central (e.g. apt-get install maven)")
    return "missing " + " and ".join(problems) if problems else None


def _cache_dir() -> Path:
    """Where resolved classpaths are kept: ``$XDG_CACHE_HOME/agentx-memory/neo4j`` (default ``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "agentx-memory" / "neo4j"


def _read_classpath(path: Path) -> str | None:
    """The classpath stored in ``path`` when the file exists and every jar it lists does, else None."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    entries = text.split(os.pathsep) if text else []
    if not entries or not all(os.path.exists(entry) for entry in entries):
        return None
    return text


def classpath(version: str) -> str:
    """The Java classpath (``:``-separated jars in ``~/.m2``) of Neo4j Community ``version`` with Bolt.

    Idempotent and cheap once cached: Maven runs only when ``<cache>/<version>.classpath`` is missing or names a jar
    that no longer exists (the first run downloads the jars). A file lock makes concurrent callers wait for one fetch.
    Raises RuntimeError with Maven's output when the version cannot be resolved.
    """
    from filelock import FileLock

    _check_version(version)
    cache = _cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / f"{version}.classpath"
    found = _read_classpath(target)
    if found:
        return found
    with FileLock(str(cache / "fetch.lock"), timeout=1800):
        found = _read_classpath(target)  # another process may have fetched it while we waited
        if found:
            return found
        partial = cache / f"{version}.classpath.{os.getpid()}.tmp"
        cmd = [
            "mvn", "-q", "-B", "-f", str(POM), f"-Dneo4j.version={version}",
            "dependency:build-classpath", f"-Dmdep.outputFile={partial}",
        ]  # fmt: skip
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if result.returncode != 0 or not partial.exists():
            partial.unlink(missing_ok=True)
            output = (result.stdout + result.stderr).strip().splitlines()
            raise RuntimeError(
                f"could not resolve Neo4j {version} from Maven Central (`{' '.join(cmd)}` exited "
                f"{result.returncode}):\n" + "\n".join(output[-40:])
            )
        os.replace(partial, target)
        found = _read_classpath(target)
        if not found:
            raise RuntimeError(f"Maven wrote an empty or broken classpath for Neo4j {version} to {target}")
        return found


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a text file ('' when it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            return b"".join(collections.deque(handle, maxlen=lines)).decode("utf-8", "replace")
    except OSError:
        return ""


def _stop_process(proc: subprocess.Popen, timeout: float) -> None:
    """End the launcher: close its stdin (EOF) and SIGTERM it, SIGKILL after ``timeout`` s.

    Its stdout is left to the reader thread, which closes it at EOF (closing it under a blocked reader is unsafe).
    """
    if proc.poll() is None:
        _close_stdin(proc)
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        except ProcessLookupError:
            pass
    _close_stdin(proc)


def _close_stdin(proc: subprocess.Popen) -> None:
    """Close the launcher's stdin: EOF tells it to shut Neo4j down."""
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def _terminate(proc: subprocess.Popen, home: str, timeout: float) -> None:
    """Stop the launcher (see ``_stop_process``) and remove its home directory."""
    _stop_process(proc, timeout)
    shutil.rmtree(home, ignore_errors=True)


class Neo4jServer:
    """A running Neo4j started by ``start_neo4j``: ``uri`` (``bolt://127.0.0.1:<port>``, no auth), ``version`` (as
    the server reports it), ``pid`` of its JVM and ``home`` (its temp directory, with ``launcher.log`` and Neo4j's
    ``logs/``). ``stop()`` ends it; so does leaving a ``with`` block, and so does the exit of this Python process."""

    def __init__(self, proc: subprocess.Popen, uri: str, version: str, home: str) -> None:
        """Wrap an already-ready launcher process; use ``start_neo4j`` rather than calling this."""
        self.uri = uri
        self.version = version
        self.pid = proc.pid
        self.home = home
        self._proc = proc
        # Stops the server and removes the home dir at interpreter exit if nobody called stop().
        self._finalizer = weakref.finalize(self, _terminate, proc, home, 30)

    @property
    def running(self) -> bool:
        """Whether the server process is still alive."""
        return self._proc.poll() is None

    def wait(self) -> int:
        """Block until the server process exits on its own; return its exit status."""
        return self._proc.wait()

    def stop(self, timeout: float = 30) -> None:
        """Shut the server down (SIGTERM, then SIGKILL after ``timeout`` s) and remove its home dir. Idempotent."""
        if self._finalizer.detach() is not None:
            _terminate(self._proc, self.home, timeout)

    def __enter__(self) -> Neo4jServer:
        """The server itself."""
        return self

    def __exit__(self, *exc_info) -> None:
        """Stop the server."""
        self.stop()

    def __repr__(self) -> str:
        """Where and what the server is."""
        return f"Neo4jServer(uri={self.uri!r}, version={self.version!r}, pid={self.pid}, home={self.home!r})"


def _verify(uri: str, timeout: float) -> None:
    """Raise unless ``RETURN 1`` works over Bolt at ``uri`` (retried while the server is unavailable, up to
    ``timeout`` seconds)."""
    import neo4j

    def answers() -> bool:
        try:
            with neo4j.GraphDatabase.driver(uri, auth=None) as driver:
                records, _, _ = driver.execute_query("RETURN 1 AS one")
        except neo4j.exceptions.ServiceUnavailable:
            return False
        if records[0]["one"] != 1:
            raise RuntimeError(f"RETURN 1 returned {records!r}")
        return True

    try:
        wait_until(answers, timeout=timeout, interval=0.2, what=f"Neo4j at {uri} to answer RETURN 1")
    except WaitTimeoutError as exc:
        raise RuntimeError(str(exc)) from exc


def start_neo4j(version: str = DEFAULT_VERSION, *, timeout: float = 180) -> Neo4jServer:
    """Start a fresh Neo4j Community ``version`` on a free loopback port and return it once ``RETURN 1`` works.

    Fetches the jars first if needed (``classpath``), runs ``Launcher.java`` with a suitable JDK and ``-Xmx1g`` (or
    the heap :data:`HEAP_ENV` names), and waits up to ``timeout`` seconds for its ready line. Raises RuntimeError
    (with the last lines of its log) when the tools are missing, the server exits early or is not ready in time;
    nothing is left running or on disk then.
    """
    problem = missing_tools(version)
    if problem:
        raise RuntimeError(f"cannot start Neo4j {version}: {problem}")
    java = _find_java(version)
    if java is None:  # missing_tools found one a moment ago
        raise RuntimeError(f"cannot start Neo4j {version}: no suitable JDK found")
    jars = classpath(version)
    heap = os.environ.get(HEAP_ENV, "").strip()
    if heap and not re.fullmatch(r"[1-9][0-9]*[mMgG]", heap):
        raise RuntimeError(f"{HEAP_ENV}={heap!r} is not a JVM heap size such as 1g or 512m")
    flags = [f"-Xmx{heap}" if heap and f == "-Xmx1g" else f for f in _JVM_FLAGS]
    if (_java_major(java) or 0) >= 23:
        flags.append("--sun-misc-unsafe-memory-access=allow")  # Netty/JCTools still use it; silences JDK 24+ warnings
    deadline = time.monotonic() + timeout
    last_error = ""
    for _attempt in range(3):  # the free port can be taken between choosing and binding it: retry on a new one
        port = _free_port()
        home = tempfile.mkdtemp(prefix="agentx-neo4j-")
        log_path = Path(home) / "launcher.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [java, *flags, "-cp", jars, str(LAUNCHER), home, str(port)],
                stdin=subprocess.PIPE,  # held open, never written: EOF (our death) stops the server
                stdout=subprocess.PIPE,
                stderr=log,  # a file, so a chatty JVM can never block on a full pipe
                start_new_session=True,  # a Ctrl-C in the terminal reaches us, and we stop it cleanly
            )
        ready: list[str] = []
        seen = threading.Event()
        other_lines: collections.deque[str] = collections.deque(maxlen=40)

        def read_stdout(stream=proc.stdout, ready=ready, seen=seen, other_lines=other_lines) -> None:
            with stream:
                for raw in stream:  # keeps draining after the ready line so the pipe never fills
                    line = raw.decode("utf-8", "replace").rstrip("\n")
                    if not ready and line.startswith(READY_PREFIX + " "):
                        ready.append(line)
                        seen.set()
                    else:
                        other_lines.append(line)
            seen.set()  # EOF: the process is gone (or closed stdout)

        threading.Thread(target=read_stdout, name=f"neo4j-{port}-stdout", daemon=True).start()
        try:
            def ready_or_gone(proc: subprocess.Popen = proc, seen: threading.Event = seen) -> bool:
                return seen.is_set() or proc.poll() is not None

            with contextlib.suppress(WaitTimeoutError):  # timed out: reported below with the log
                wait_until(ready_or_gone, timeout=max(0.0, deadline - time.monotonic()),
                           what=f"Neo4j {version}'s ready line")
            if ready:
                _, uri, reported = ready[0].split(" ", 2)
                _verify(uri, timeout=max(deadline - time.monotonic(), 10))
                return Neo4jServer(proc, uri, reported.strip(), home)
        except BaseException:  # Ctrl-C, a failed RETURN 1, ...: leave nothing running or on disk
            _terminate(proc, home, timeout=10)
            raise
        if proc.poll() is None:  # stdout closed (or the deadline passed): let an exiting JVM finish
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.0, min(10.0, deadline - time.monotonic())))
        timed_out = proc.poll() is None
        _stop_process(proc, timeout=10)
        log_tail = _tail(log_path)
        shutil.rmtree(home, ignore_errors=True)
        last_error = (
            f"Neo4j {version} ({java}) "
            + (f"was not ready within {timeout:g} s" if timed_out else f"exited early with status {proc.returncode}")
            + ". Last lines of its stdout/stderr:\n"
            + "\n".join(other_lines)
            + "\n"
            + log_tail
        )
        if timed_out or "Address already in use" not in last_error:
            break
    raise RuntimeError(last_error)


def main(argv: list[str]) -> int:
    """``python tests/neo4j/server.py [--fetch] [version]``: start a server, print its URI, serve until Ctrl-C
    (``--fetch``: only make sure the version's jars are in ``~/.m2``).

    The version is the argument, else ``$AGENTX_TEST_NEO4J_VERSION``, else ``DEFAULT_VERSION``.
    """
    args = [a for a in argv[1:] if a != "--fetch"]
    version = args[0] if args else os.environ.get(VERSION_ENV, DEFAULT_VERSION)
    if "--fetch" in argv[1:]:  # fetch the jars into ~/.m2 (idempotent) and stop: the install step of CI
        problem = missing_tools(version)
        if problem:
            print(f"cannot fetch Neo4j {version}: {problem}", file=sys.stderr)
            return 1
        jars = classpath(version).split(os.pathsep)
        print(f"Neo4j {version}: {len(jars)} jars in place")
        return 0
    started = time.monotonic()
    # SIGTERM (a script's `kill`) stops the server and removes its home like Ctrl-C does.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        with start_neo4j(version) as server:
            took = time.monotonic() - started
            print(f"Neo4j {server.version} ready at {server.uri} (no auth) in {took:.1f} s", flush=True)
            print(f"pid {server.pid}, home {server.home}; Ctrl-C to stop", flush=True)
            server.wait()
            log = _tail(Path(server.home) / "launcher.log") + _tail(Path(server.home) / "logs" / "debug.log")
            print(f"Neo4j exited on its own; the end of its logs:\n{log}", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
