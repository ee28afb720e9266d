"""Placement planning in the family of Ganeti's htools (hail, hbal, hspace).

Pure computation on an iallocator protocol-v2 input message; nothing here
talks to daemons or reads the configuration, so masterd can run it
in-process and ``halloc`` can run it as an allocator program.

``model``: the cluster built from the message and the per-node resource
arithmetic with hail's checks; ``metrics``: the cluster score;
``placement``: allocation on one node or a pair, group choice;
``moves``: instance moves and the opcodes describing them;
``allocator``: the request types and the ``halloc`` program;
``capacity`` and ``balance``: hspace- and hbal-style planning;
``utilisation``: the instances' dynamic load (hbal's ``-U`` file, mond
reports) that balancing may take into account.
"""

# Why a candidate was rejected, in the order hail lists them (FailMode)
FAIL_MEM = "FailMem"
FAIL_DISK = "FailDisk"
FAIL_CPU = "FailCPU"
FAIL_N1 = "FailN1"
FAIL_TAGS = "FailTags"
FAIL_MIG = "FailMig"
FAIL_DISK_COUNT = "FailDiskCount"
FAIL_SPINDLES = "FailSpindles"
FAIL_INTERNAL = "FailInternal"
# Ours: the node is excluded by the request's member_of (aggregates)
FAIL_MEMBER_OF = "FailMemberOf"
FAIL_MODES = (FAIL_MEM, FAIL_DISK, FAIL_CPU, FAIL_N1, FAIL_TAGS, FAIL_MIG,
              FAIL_DISK_COUNT, FAIL_SPINDLES, FAIL_INTERNAL, FAIL_MEMBER_OF)
