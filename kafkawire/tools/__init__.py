"""The ``kafkawire`` command (``kafkawire.tools.cli:main``): one module per subcommand (``main``,
``server-start``, ``storage``, ``metadata-quorum``, ``features``, ``dump-log``, ``metadata-shell``,
``api-versions``, ``test-raft-server``, ``pcap``). Nothing in kafkawire imports it; the library
API is ``import kafkawire``. Imported on first use.
"""
from kafkawire._lazy import lazy_exports

__all__ = ["main"]

__getattr__, __dir__ = lazy_exports(__name__, {"main": ".cli:main"})
