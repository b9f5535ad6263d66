"""SSH options shared by every command that connects (CONTRACTS.md, Targets)."""

from __future__ import annotations

import argparse


def add_ssh_options(parser: argparse.ArgumentParser) -> None:
    """SSH options shared by every command that connects (CONTRACTS.md, Targets)."""
    group = parser.add_argument_group("ssh")
    group.add_argument("--ssh-config", metavar="FILE", help="ssh config file (like ssh -F)")
    group.add_argument("-i", "--identity", metavar="FILE", action="append", help="identity (private key) file")
    group.add_argument("--known-hosts", metavar="FILE", help="known_hosts file (default ~/.ssh/known_hosts)")
    group.add_argument(
        "--accept-new-host-key",
        action="store_true",
        help="trust and record an unknown host key (like StrictHostKeyChecking=accept-new)",
    )
