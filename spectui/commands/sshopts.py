"""SSH options shared by every command that connects (CONTRACTS.md, Targets)."""

from __future__ import annotations

import argparse


def add_ssh_options(parser: argparse.ArgumentParser) -> None:
    """SSH options shared by every command that connects (CONTRACTS.md, Targets)."""
    group = parser.add_argument_group("ssh")
    group.add_argument("--ssh-config", metavar="FILE", help="ssh config file (like ssh -F)")
    group.add_argument("-i", "--identity", metavar="FILE", action="append", help="identity (private key) file")
    group.add_argument("--known-hosts", metavar="FILE", help="known_hosts file, like ssh -o UserKnownHostsFile=FILE (default: the ssh config's, else ~/.ssh/known_hosts); also used for ProxyJump hops")
    group.add_argument(
        "--accept-new-host-key",
        action="store_true",
        help="trust an unknown host key and write it to the first UserKnownHostsFile (like "
             "StrictHostKeyChecking=accept-new); a CHANGED key is always refused",
    )
