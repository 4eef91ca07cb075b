"""A throwaway MIT Kerberos KDC on 127.0.0.1 for the GSSAPI tests: a realm in a temporary
directory (kdb5_util create), principals with random keys exported to keytabs (kadmin.local),
and krb5kdc in the foreground (-n), killed by its pid. Debian's krb5-kdc, krb5-admin-server and
krb5-user packages (.ci/run installs them); ``kdc_binaries_missing()`` says which are absent, for a
skip with the reason.

The realm's krb5.conf sends clients to the KDC over TCP only (udp_preference_limit = 1), turns off
DNS and reverse lookups, and the KDC listens on TCP only, on a port picked free.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from kafkawire.raft.node.local_quorum import free_ports
from tests.conftest import unavailable

REALM = "EXAMPLE.COM"
_SBIN = os.pathsep.join((os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin", "/sbin"))
_BINARIES = ("krb5kdc", "kdb5_util", "kadmin.local")


def _which(name: str) -> str | None:
    return shutil.which(name, path=_SBIN)


def kdc_binaries_missing() -> str | None:
    """Why no KDC can run here (the missing programs), or None."""
    missing = [name for name in _BINARIES if _which(name) is None]
    if missing:
        return f"no MIT Kerberos KDC here ({', '.join(missing)} not found: apt-get install krb5-kdc krb5-admin-server)"
    return None


def _free_port() -> int:
    """One port reserved as free_ports reserves them: a port probed free and closed is handed
    out again by another process's bind(0) (a test file beside this one under pytest-xdist)."""
    port, = free_ports(1)
    return port


class Kdc:
    """``with Kdc(tmp_path) as kdc: kdc.keytab("kafka/localhost")``; ``kdc.env`` is the
    environment a Kerberos client or server of the realm needs (KRB5_CONFIG and a replay cache
    directory of its own)."""

    def __init__(self, base: Path):
        self.base = Path(base)
        self.port = _free_port()
        self.krb5_conf = self.base / "krb5.conf"
        self.process: subprocess.Popen | None = None
        self.env = {"KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.base / "kdc.conf"),
                    "KRB5RCACHEDIR": str(self.base)}

    def __enter__(self) -> "Kdc":
        self.base.mkdir(parents=True, exist_ok=True)
        self.krb5_conf.write_text(
            f"[libdefaults]\n default_realm = {REALM}\n dns_lookup_realm = false\n dns_lookup_kdc = false\n"
            " rdns = false\n udp_preference_limit = 1\n"
            f"[realms]\n {REALM} = {{\n  kdc = 127.0.0.1:{self.port}\n }}\n")
        (self.base / "kdc.conf").write_text(
            f"[kdcdefaults]\n kdc_listen = \"\"\n kdc_tcp_listen = 127.0.0.1:{self.port}\n"
            f"[realms]\n {REALM} = {{\n  database_name = {self.base}/principal\n"
            f"  key_stash_file = {self.base}/stash\n  acl_file = {self.base}/kadm5.acl\n"
            f"  kdc_listen = \"\"\n  kdc_tcp_listen = 127.0.0.1:{self.port}\n }}\n"
            f"[logging]\n kdc = FILE:{self.base}/kdc.log\n")
        self._run("kdb5_util", "create", "-s", "-r", REALM, "-P", "kafkawire-test-master-key")
        log = open(self.base / "krb5kdc.out", "wb")
        try:
            self.process = subprocess.Popen([_which("krb5kdc"), "-n", "-r", REALM], env=self._env(),
                                            stdout=log, stderr=subprocess.STDOUT)
        finally:
            log.close()
        self._wait_listening()
        return self

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)

    def _env(self) -> dict:
        return {**os.environ, **self.env}

    def _run(self, program: str, *args: str) -> str:
        done = subprocess.run([_which(program), *args], env=self._env(), capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(args)} failed ({done.returncode}): {done.stderr or done.stdout}")
        return done.stdout

    def _wait_listening(self, timeout_s: float = 20) -> None:
        """Until the KDC accepts a TCP connection (bounded); its exit fails at once, with its output."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"krb5kdc exited ({self.process.returncode}): "
                                   f"{(self.base / 'krb5kdc.out').read_text(errors='replace')}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"krb5kdc did not listen on 127.0.0.1:{self.port} within {timeout_s} s")

    def add_principal(self, principal: str) -> None:
        self._run("kadmin.local", "-r", REALM, "-q", f"addprinc -randkey {principal}@{REALM}")

    def export(self, principal: str, name: str) -> Path:
        """``principal``'s key to the keytab ``<name>.keytab``: a new random key (kadmin's ktadd
        changes it), so a keytab exported before holds a stale one."""
        path = self.base / f"{name}.keytab"
        self._run("kadmin.local", "-r", REALM, "-q", f"ktadd -k {path} {principal}@{REALM}")
        return path

    def keytab(self, principal: str) -> Path:
        """A new principal with a random key, exported to a keytab of its own."""
        self.add_principal(principal)
        return self.export(principal, principal.replace("/", "_"))


@contextlib.contextmanager
def running_kdc(base: Path):
    """A Kdc in ``base`` with its environment (KRB5_CONFIG, ...) set in this process, and so in
    the nodes it starts, until the block ends; the calling test skips, saying why (under CI:
    fails), without the KDC's binaries or the gssapi package (the extra kerberos)."""
    reason = kdc_binaries_missing()
    if reason:
        unavailable(reason)                 # CI installs the KDC (.ci/run): a failure there
    pytest.importorskip("gssapi", reason="the gssapi package (the extra kerberos) is not installed")
    with pytest.MonkeyPatch.context() as patch, Kdc(base) as kdc:
        for name, value in kdc.env.items():
            patch.setenv(name, value)
        yield kdc
