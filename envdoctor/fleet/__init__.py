"""Many nodes at once: the facts the fleet rules read, and the two ways to gather them.

- `envdoctor fleet SNAPSHOT...` (offline.py) re-diagnoses snapshots written on each node.
- `envdoctor cluster` (distributed.py), started by the job's own launcher, runs the check on every
  node, exchanges the snapshots through the launcher's rendezvous store and runs an all-reduce.

Both end in the same FleetFacts (facts.py), judged by the rules in envdoctor/rules/fleet/ and
rendered by report.py / render.py. Only distributed.py and allreduce.py import torch.
"""
