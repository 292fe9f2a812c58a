"""The control protocol, written once: the command table (typed requests, replies and
fault codes), the wire encoding, and a proof (for the type checker) that the local core,
the remote core and the test fake implement the same API."""
