"""Runtime: devices, arrays, kernel launches, the tape and the compile cache."""
