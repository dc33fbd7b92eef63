"""vgi-rpc's conformance suite over its pipe and subprocess transports, plain and through
``VortexTransport`` (Python >= 3.13, where vgi-rpc installs)."""
