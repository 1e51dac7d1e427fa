"""The Things use cases of the WoT Discovery directory: register, replace, patch, delete, read, leases, expiry."""
