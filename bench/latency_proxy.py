"""A TCP proxy that makes a loopback S3 server behave more like a distant one.

    python bench/latency_proxy.py LISTEN_PORT TARGET_PORT [LATENCY_MS] [MB_PER_S]

Every burst of bytes a client sends waits LATENCY_MS (default 20) before it reaches the
server, and each connection receives at most MB_PER_S (default 80) megabytes a second, as one
connection to S3 in the same region does. Loopback servers (s3s-fs, moto) answer in well under
a millisecond and at memory speed, so on them a request costs what the server's own work per
request costs; through this proxy it costs a round trip, and bytes cost time, which is what
decides whether reading parts of chunks pays off on a real object store.
"""

import asyncio
import sys


async def pipe(reader, writer, delay, rate):
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                break
            if delay:
                await asyncio.sleep(delay)
            writer.write(data)
            await writer.drain()
            if rate:
                await asyncio.sleep(len(data) / rate)
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def main():
    listen, target = int(sys.argv[1]), int(sys.argv[2])
    latency = float(sys.argv[3]) / 1000 if len(sys.argv) > 3 else 0.020
    rate = float(sys.argv[4]) * 1e6 if len(sys.argv) > 4 else 80e6

    async def serve(client_reader, client_writer):
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target)
        await asyncio.gather(
            pipe(client_reader, server_writer, latency, 0),
            pipe(server_reader, client_writer, 0, rate),
        )

    server = await asyncio.start_server(serve, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
