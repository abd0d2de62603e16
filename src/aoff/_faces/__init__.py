"""The faces: what the training code calls (``OffPolicyLogger``, ``AsyncOffPolicyLogger``,
``RemoteLogger``) and the training process's side of process mode (start the agent,
drive the shipper, fall back to an in-process pump when the agent is lost)."""
