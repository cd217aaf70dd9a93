#!/usr/bin/env python3
"""Measures how a running server treats the connections a hostile or broken client makes
(a stalled body, slowloris, idle connections), with nothing but the standard library:

  stalled body  a request head declaring 600 KB, then 1 KB of body, then nothing
  slowloris     N connections, each sending its request head one byte every second
  idle          N keep-alive connections that sent one request and stay open

For each: how long until the server answered or closed, and how many connections it kept.
Usage: python3 tools/serve/edges.py HOST:PORT [--connections N] [--limit SECONDS]
The limit only bounds this script's wait; a server that never closes is reported as such.
"""
import argparse
import selectors
import socket
import time


def stalled_body(address, limit):
    s = socket.create_connection(address)
    s.sendall(b"POST /v2/models/x/infer HTTP/1.1\r\nhost: x\r\ncontent-length: 600000\r\n\r\n" + b" " * 1024)
    s.settimeout(limit)
    started = time.monotonic()
    try:
        answer = s.recv(200)
    except socket.timeout:
        return f"stalled body: still open after {limit:.0f} s"
    took = time.monotonic() - started
    status = answer.split(b"\r\n", 1)[0].decode(errors="replace") or "(closed without an answer)"
    return f"stalled body: `{status}` after {took:.2f} s"


def many(address, count, limit, head_drip):
    selector = selectors.DefaultSelector()
    refused = 0
    opened = []
    for _ in range(count):
        try:
            s = socket.create_connection(address, timeout=5)
        except OSError:
            refused += 1
            continue
        s.setblocking(False)
        if head_drip:
            s.send(b"GET /v2 HTTP/1.1\r\n")
        else:
            s.send(b"GET /v2/health/live HTTP/1.1\r\nhost: x\r\n\r\n")
        selector.register(s, selectors.EVENT_READ)
        opened.append(s)
    started = time.monotonic()
    closed_at = []
    answered_503 = 0
    alive = set(opened)
    next_drip = started + 1
    while alive and time.monotonic() - started < limit:
        for key, _ in selector.select(timeout=0.2):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if data.startswith(b"HTTP/1.1 503"):
                answered_503 += 1
            if not data:
                closed_at.append(time.monotonic() - started)
                selector.unregister(s)
                alive.discard(s)
                s.close()
        if head_drip and time.monotonic() >= next_drip:
            next_drip += 1
            for s in list(alive):
                try:
                    s.send(b"x")
                except OSError:
                    pass
    kind = "slowloris" if head_drip else "idle keep-alive"
    closed = len(closed_at)
    text = f"{kind}: {count} connections, {refused} refused at connect, {answered_503} answered 503; "
    text += f"{closed} closed by the server"
    if closed_at:
        closed_at.sort()
        text += f" (first after {closed_at[0]:.2f} s, all of them after {closed_at[-1]:.2f} s)"
    if alive:
        text += f"; {len(alive)} still open after {limit:.0f} s"
    for s in alive:
        s.close()
    return text


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("address")
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--limit", type=float, default=60.0)
    args = parser.parse_args()
    host, port = args.address.rsplit(":", 1)
    address = (host, int(port))
    print(stalled_body(address, args.limit), flush=True)
    print(many(address, args.connections, args.limit, head_drip=True), flush=True)
    print(many(address, min(args.connections, 500), args.limit, head_drip=False), flush=True)


if __name__ == "__main__":
    main()
