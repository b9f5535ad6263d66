"""I/O adapters: local and SSH hosts, log tails, HTTP probes, server discovery."""
