"""The raft driver's disk-thread work (RaftDriver's part, kafkawire.raft.node.driver): the log's
fsync (group commit), an election's quorum-state write, a fetched snapshot's chunks and its
install, each on the driver's disk thread, and the Readys held until that work is durable."""
from __future__ import annotations

import asyncio

from kafkawire.raft.io import InstallSnapshot, LogFlushed, WriteSnapshotChunk

from .driver_state import DriverState


class DiskWork(DriverState):
    """RaftDriver's disk-thread work (a mixin: it uses the driver's executor, store, core, _held
    and _step)."""

    def _start_flush(self) -> None:
        """Group commit on the disk thread: one fsync at a time; the flushes asked for while
        it runs are done together by the next one."""
        if self._flushing or self._flush_requested == self._flush_done or self.failure is not None:
            return
        target = self._flush_requested
        sync = self.store.prepare_flush()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:      # started outside a loop (tools): no loop to keep free
            sync()
            self._flush_done = self._unreported_flush = target
            return
        self._flushing = loop.run_in_executor(self._disk_thread, sync)
        self._flushing.add_done_callback(lambda done: self._on_flushed(target, done))

    def _on_flushed(self, target: int, done: asyncio.Future) -> None:
        self._flushing = None
        if not self._disk_work_succeeded(done):
            return
        self._flush_done = target
        if not self._release_held():
            return
        self._step(LogFlushed(self.clock(), target))     # a leader's own log end now counts
        if self._drain_after_flush:
            self._drain_appends()      # before any other flush starts: the appends waited for this one
        self._start_flush()

    def _disk_work_succeeded(self, done: asyncio.Future) -> bool:
        """Whether work done on the disk thread finished and the node still runs; a disk that
        refused it (an fsync or a write failed) stops the node, as Kafka halts."""
        if done.cancelled() or self.failure is not None or self._closing:
            return False
        error = done.exception()
        if isinstance(error, Exception):
            self._stop_on_failure(error)
            return False
        return True

    def _write_election(self, election, kraft_version: int) -> None:
        """Write and fsync the quorum-state file on the disk thread, after the fsyncs handed to
        it before (one thread: in order); the Ready is held until it is done (_apply)."""
        self._disk_writes += 1
        number = self._disk_writes
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:      # started outside a loop (tools): no loop to keep free
            self.store.write_election(election, kraft_version)
            self._disk_writes_done = number
            return
        written = loop.run_in_executor(self._disk_thread, self.store.write_election, election, kraft_version)
        written.add_done_callback(lambda done: self._on_disk_write_done(number, done))

    def _write_chunk(self, op: WriteSnapshotChunk) -> None:
        """A fetched snapshot's chunk is written on the disk thread, before the install that
        makes it durable (one thread: in order); nothing waits for it but that install."""
        write = self.store.prepare_chunk(op)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:      # started outside a loop (tools): no loop to keep free
            write()
            return
        written = loop.run_in_executor(self._disk_thread, write)
        written.add_done_callback(lambda done: self._on_disk_write_done(0, done))

    def _start_install(self, op: InstallSnapshot) -> None:
        """A fetched snapshot's install: the store says "installed" to the core at once
        (prepare_install), its fsync, rename and the log's truncation, in that order, run on the
        disk thread after what was handed to it before, and the Ready is held until they are
        done (_apply), so nothing that follows from the install (the next Fetch, the snapshot
        loaded) happens before the snapshot is durable and the log cut."""
        install = self.store.prepare_install(op.snapshot_id)
        self._disk_writes += 1
        number = self._disk_writes
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:      # started outside a loop (tools): no loop to keep free
            install()
            self.store.finish_install()
            self._disk_writes_done = number
            return
        self._installing = installing = self._disk_thread.submit(install)

        def installed(done: asyncio.Future) -> None:
            if self._installing is installing and not done.cancelled() and done.exception() is None:
                self._finish_install()
            self._on_disk_write_done(number, done)
        asyncio.wrap_future(installing, loop=loop).add_done_callback(installed)

    def _finish_install(self) -> None:
        """Hand the log back to the loop once the install in flight is done, waiting for it if
        it is not (on the loop: only when a log operation or a reader of the log comes before the
        install is done, which its held Ready, whose Fetch has not left, makes rare)."""
        installing, self._installing = self._installing, None
        if installing is not None:
            installing.result()     # the disk's error, if any, stops the node (_step)
            self.store.finish_install()

    def _on_disk_write_done(self, number: int, done: asyncio.Future) -> None:
        if not self._disk_work_succeeded(done):
            return
        self._disk_writes_done = max(self._disk_writes_done, number)
        self._release_held()

    def _release_held(self) -> bool:
        """The effects of the held Readys whose writes are now durable, in order; False if that
        stopped the node."""
        try:
            while (self._held and self._held[0][0] <= self._flush_done and self._held[0][1] <= self._disk_writes_done
                   and self.failure is None):
                self._apply_effects(self._held.popleft()[2])
        except Exception as exc:     # the state machine or the log broke a rule: stop, as in _step
            self._stop_on_failure(exc)
            return False
        return True
