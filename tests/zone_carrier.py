"""The two ends that carry a zone's connections out (tests/zone_network.py): `inside FOLDER
PORT...`, in the zone, listens on each port and carries each connection to the Unix socket
FOLDER/PORT.sock; `outside FOLDER PORT...` listens on those sockets and connects each to the
port outside. Nothing but the standard library: it runs before anything else is set up."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def _carry(side: str, folder: Path, ports: list[int]) -> None:
    for port in ports:
        path = str(folder / f"{port}.sock")

        async def carried(reader, writer, port=port, path=path) -> None:
            try:
                if side == "inside":
                    far_reader, far_writer = await asyncio.open_unix_connection(path)
                else:
                    far_reader, far_writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                writer.close()
                return
            await asyncio.gather(_pipe(reader, far_writer), _pipe(far_reader, writer))

        if side == "inside":
            await asyncio.start_server(carried, "127.0.0.1", port)
        else:
            await asyncio.start_unix_server(carried, path)
    await asyncio.Event().wait()


if __name__ == "__main__":
    side, folder, *ports = sys.argv[1:]
    if side == "inside":  # the outside end listens first
        deadline = time.monotonic() + 10
        while not all((Path(folder) / f"{p}.sock").exists() for p in ports):
            assert time.monotonic() < deadline, "the outside end did not listen"
            time.sleep(0.05)
    asyncio.run(_carry(side, Path(folder), [int(p) for p in ports]))
