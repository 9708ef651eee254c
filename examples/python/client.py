#!/usr/bin/env python3
"""Top wagering users of your affiliate over gRPC, from Python.

Uses only Debian's packages (python3-grpcio, python3-protobuf) and message
classes generated from proto/ with protoc; no gRPC stub generator is needed:
the one method is called with ``channel.unary_unary``. See docs/clients.md.

    # once: generate the message classes into examples/python/gen
    npx buf build -o /tmp/topwagers.binpb
    mkdir -p examples/python/gen
    protoc --descriptor_set_in=/tmp/topwagers.binpb --python_out=examples/python/gen \\
        topwagers/v1/top_wagers.proto

    # then (the current half-month unless --start/--end are given)
    TOPWAGERS_KEY=tw_... /usr/bin/python3 examples/python/client.py --target localhost:8080

    # or live: the board again each time it changes (WatchTopAffiliateWagersByPeriod), until Ctrl-C
    TOPWAGERS_KEY=tw_... /usr/bin/python3 examples/python/client.py --target localhost:8080 --watch
"""

import argparse
import calendar
import json
import os
import sys
import time
from pathlib import Path

# The generated package (topwagers/v1/top_wagers_pb2.py) lives in ./gen beside
# this file unless PYTHONPATH already points at it.
sys.path.append(str(Path(__file__).resolve().parent / "gen"))

import grpc  # noqa: E402
from topwagers.v1 import top_wagers_pb2  # noqa: E402

METHOD = "/topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod"
WATCH_METHOD = "/topwagers.v1.TopWagersService/WatchTopAffiliateWagersByPeriod"


def current_half_month(now: int) -> tuple[int, int]:
    """The half-month containing `now`: the 1st-15th or the 16th-last day, UTC, both ends inclusive."""
    today = time.gmtime(now)
    first_half = today.tm_mday <= 15
    start = calendar.timegm((today.tm_year, today.tm_mon, 1 if first_half else 16, 0, 0, 0))
    if first_half:
        next_start = calendar.timegm((today.tm_year, today.tm_mon, 16, 0, 0, 0))
    elif today.tm_mon == 12:
        next_start = calendar.timegm((today.tm_year + 1, 1, 1, 0, 0, 0))
    else:
        next_start = calendar.timegm((today.tm_year, today.tm_mon + 1, 1, 0, 0, 0))
    # The end is inclusive: one second before the next period starts, so no wager counts twice.
    return start, next_start - 1


def top_wagers(channel: grpc.Channel, api_key: str, start: int, end: int, num_users: int, timeout: float = 10.0):
    """Calls GetTopAffiliateWagersByPeriod; raises grpc.RpcError with the status code on failure."""
    call = channel.unary_unary(
        METHOD,
        request_serializer=top_wagers_pb2.GetTopAffiliateWagersByPeriodRequest.SerializeToString,
        response_deserializer=top_wagers_pb2.GetTopAffiliateWagersByPeriodResponse.FromString,
    )
    request = top_wagers_pb2.GetTopAffiliateWagersByPeriodRequest(
        start_timestamp=start, end_timestamp=end, num_users=num_users
    )
    return call(request, metadata=[("authorization", f"Bearer {api_key}")], timeout=timeout)


def watch_top_wagers(channel: grpc.Channel, api_key: str, start: int, end: int, num_users: int):
    """Yields the board now and each time it changes (heartbeats are skipped). A stream that ends with
    UNAVAILABLE (the server restarts) is opened again after a second with the last version seen, so an
    unchanged board is not sent twice; other errors raise grpc.RpcError."""
    call = channel.unary_stream(
        WATCH_METHOD,
        request_serializer=top_wagers_pb2.WatchTopAffiliateWagersByPeriodRequest.SerializeToString,
        response_deserializer=top_wagers_pb2.WatchTopAffiliateWagersByPeriodResponse.FromString,
    )
    version = ""
    while True:
        request = top_wagers_pb2.WatchTopAffiliateWagersByPeriodRequest(
            start_timestamp=start, end_timestamp=end, num_users=num_users, resume_version=version
        )
        try:
            for message in call(request, metadata=[("authorization", f"Bearer {api_key}")]):
                version = message.version
                if not message.heartbeat:
                    yield message
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            time.sleep(1)


def print_entries(entries, as_json: bool) -> None:
    for entry in entries:
        if as_json:
            print(json.dumps({
                "rank": entry.rank,
                "username": entry.username,
                "avatar": entry.avatar,
                # The exact decimal: use it for arithmetic; total_wagered is a double for display.
                "totalWageredDecimal": entry.total_wagered_decimal,
                "userId": entry.user_id,
            }, ensure_ascii=False))
        else:
            print(f"{entry.rank:>3}  {entry.username:<24} {entry.total_wagered_decimal:>22}")
    if not as_json and len(entries) == 0:
        print("nobody wagered in this period")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=os.environ.get("TOPWAGERS_TARGET", "localhost:8080"),
                        help="host:port of the public port (default localhost:8080)")
    parser.add_argument("--key", default=os.environ.get("TOPWAGERS_KEY"),
                        help="API key (default: $TOPWAGERS_KEY)")
    parser.add_argument("--start", type=int, help="first second, Unix seconds UTC, inclusive")
    parser.add_argument("--end", type=int, help="last second, Unix seconds UTC, inclusive")
    parser.add_argument("--num-users", type=int, default=10, help="1 to 100 (default 10)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per entry")
    parser.add_argument("--tls", action="store_true", help="connect with TLS (behind a TLS load balancer)")
    parser.add_argument("--watch", action="store_true",
                        help="print the board again each time it changes, until Ctrl-C")
    args = parser.parse_args()
    if not args.key:
        parser.error("an API key is needed: --key or TOPWAGERS_KEY")
    start, end = current_half_month(int(time.time()))
    start = args.start if args.start is not None else start
    end = args.end if args.end is not None else end

    channel = (grpc.secure_channel(args.target, grpc.ssl_channel_credentials()) if args.tls
               else grpc.insecure_channel(args.target))
    with channel:
        try:
            if args.watch:
                for board in watch_top_wagers(channel, args.key, start, end, args.num_users):
                    if args.json:
                        print(json.dumps({"board": board.version, "asOf": board.as_of}))
                    else:
                        print(f"board {board.version} as of {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(board.as_of))}")
                    print_entries(board.data, args.json)
                    sys.stdout.flush()
                return 0
            response = top_wagers(channel, args.key, start, end, args.num_users)
        except grpc.RpcError as error:
            # The code is the stable part (UNAUTHENTICATED, INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE).
            print(f"{error.code().name}: {error.details()}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 0

    print_entries(response.data, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
