"""SSH with OpenSSH's semantics: `SSHHost` (host.py: the Host interface over asyncssh), its destination and
config (dest), errors as one line (errors), file reads over SFTP or exec'd reads (files, reader) and the
tail wake-up (notify)."""

from spectui.sources.ssh.host import ExecFile, SFTPFile, SSHHost, SSHOptions, TailNotifier

__all__ = ["ExecFile", "SFTPFile", "SSHHost", "SSHOptions", "TailNotifier"]
