"""`kubernetes.default.svc:443` for the pods: a TCP forward from a loopback address to the
API server. There is no kube-proxy here, so the Service's ClusterIP leads nowhere; each
pod's hosts file maps the Service's names to this address instead. TLS passes through
untouched: the driver verifies the API server's own certificate, which names
`kubernetes.default.svc`.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading

log = logging.getLogger(__name__)


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                sock.shutdown(how)


class TcpForward:
    def __init__(self, listen: tuple[str, int], target: tuple[str, int]) -> None:
        self.target = target
        self.server = socket.create_server(listen, reuse_port=False)
        self._thread = threading.Thread(target=self._accept, name="api-forward", daemon=True)

    def start(self) -> TcpForward:
        self._thread.start()
        return self

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=10)
            upstream.settimeout(None)
        except OSError as error:
            log.warning("forward to %s:%s failed: %s", *self.target, error)
            client.close()
            return
        back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
        back.start()
        _pipe(client, upstream)
        back.join()
        client.close()
        upstream.close()

    def close(self) -> None:
        self.server.close()
