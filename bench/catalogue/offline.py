"""Offline by construction: cells must never download. Any attempt fails at once, naming the target."""
from __future__ import annotations

import ipaddress
import os
import socket

from bench.catalogue.backends import COMMON_ENVIRONMENT


class NetworkBlocked(ConnectionError):
    pass


def _is_local(host: object) -> bool:
    if host in (None, "", "localhost"):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _blocked(what: str, host: object, port: object) -> NetworkBlocked:
    return NetworkBlocked(
        f"benchmark cells run offline, but something tried to {what} {host}:{port}. "
        "Models are built from configs with random weights; nothing may be downloaded (no from_preset/from_pretrained)."
    )


def install_guard() -> None:
    """Set the hubs' offline variables and make non-loopback name lookups and connections raise."""
    for key, value in COMMON_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def getaddrinfo(host, port, *args, **kwargs):
        if not _is_local(host):
            raise _blocked("resolve", host, port)
        return real_getaddrinfo(host, port, *args, **kwargs)

    def check(address):
        if isinstance(address, tuple) and not _is_local(address[0]):
            raise _blocked("connect to", address[0], address[1])

    def connect(self, address):
        check(address)
        return real_connect(self, address)

    def connect_ex(self, address):
        check(address)
        return real_connect_ex(self, address)

    socket.getaddrinfo = getaddrinfo
    socket.socket.connect = connect
    socket.socket.connect_ex = connect_ex
