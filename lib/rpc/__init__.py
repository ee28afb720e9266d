"""Node RPC: the client side of the calls served by ganeti-noded.

``ganeti.rpc.node.RpcRunner`` is what callers use; ``ganeti.rpc.client``
is the HTTPS transport underneath. The procedures are declared in
``ganeti.rpc_defs``.
"""
