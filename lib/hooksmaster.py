"""Running the hooks of an operation (doc/hooks.rst).

An LU with an ``HPATH`` gets its pre hooks after CheckPrereq and its post
hooks after Exec: every node its BuildHooksNodes names runs the scripts of
``<hooks dir>/<HPATH>-<phase>.d`` through the hooks_runner RPC. A failing
pre hook vetoes the operation before it changes anything; post hooks can
only be reported, as the operation has already happened. An unreachable
node vetoes nothing either way: hooks are the admin's extension, not a
quorum.
"""

from typing import Any, Callable

from ganeti import constants, errors, pathutils, vcluster

# (node list, hooks path, phase, environment) -> {node: RpcResult}; the
# signature of RpcRunner.call_hooks_runner
HooksExecutionFn = Callable[[list[str], str, str, dict[str, str]],
                            dict[str, Any]]

_PREFIXES = {
    constants.HOOKS_PHASE_PRE: "GANETI_",
    constants.HOOKS_PHASE_POST: "GANETI_POST_",
}


def _UniqueNodes(nodes: Any) -> list[str]:
    return list(dict.fromkeys(nodes or ()))


class HooksMaster:
    """The hooks of one operation: who runs them, with what environment.

    ``nodes`` is ``(pre_nodes, post_nodes)``, node UUIDs (or names, for a
    node not in the configuration yet). ``build_env_fn`` gives the
    operation's own variables without prefix; it is called once before
    the pre phase and again after the operation, and the post phase gets
    both sets (``GANETI_<key>`` as before, ``GANETI_POST_<key>`` as after).
    ``prepare_post_nodes_fn`` may change the post nodes once the operation
    has run. ``log_fn`` reports what does not stop the operation.
    """

    def __init__(self, opcode: str, hooks_path: str | None,
                 nodes: tuple[Any, Any],
                 hooks_execution_fn: HooksExecutionFn,
                 build_env_fn: Callable[[], dict[str, Any]],
                 log_fn: Callable[..., None],
                 htype: str | None = None,
                 cluster_name: str | None = None,
                 master_name: str | None = None,
                 prepare_post_nodes_fn: Callable[[list[str]], list[str]]
                 | None = None):
        self.opcode = opcode
        self.hooks_path = hooks_path
        self.pre_nodes = _UniqueNodes(nodes[0])
        self.post_nodes = _UniqueNodes(nodes[1])
        self.hooks_execution_fn = hooks_execution_fn
        self.build_env_fn = build_env_fn
        self.log_fn = log_fn
        self.htype = htype
        self.cluster_name = cluster_name
        self.master_name = master_name
        self.prepare_post_nodes_fn = prepare_post_nodes_fn
        self.pre_env = self._BuildEnv(constants.HOOKS_PHASE_PRE)

    def _BuildEnv(self, phase: str) -> dict[str, str]:
        """The operation's variables of a phase, prefixed.

        Post-phase values are computed anew (the operation changed
        things) and joined with the pre-phase ones.
        """
        prefix = _PREFIXES[phase]
        env: dict[str, str] = {}
        if self.hooks_path is not None:
            for key, value in (self.build_env_fn() or {}).items():
                if key.upper().startswith("GANETI_"):
                    raise errors.ProgrammerError(
                        "Hooks environment key %r must be given without"
                        " prefix" % key)
                env[prefix + key] = str(value)
        if phase == constants.HOOKS_PHASE_POST:
            env.update(self.pre_env)
        return env

    def _BaseEnv(self, hpath: str, phase: str) -> dict[str, str]:
        """What every hook script gets, whatever the operation."""
        env = {
            "PATH": constants.HOOKS_PATH,
            "GANETI_HOOKS_VERSION": str(constants.HOOKS_VERSION),
            "GANETI_OP_CODE": self.opcode,
            "GANETI_DATA_DIR": vcluster.MakeVirtualPath(pathutils.DATA_DIR),
            "GANETI_HOOKS_PHASE": phase,
            "GANETI_HOOKS_PATH": hpath,
        }
        if self.htype:
            env["GANETI_OBJECT_TYPE"] = self.htype
        if self.cluster_name is not None:
            env["GANETI_CLUSTER"] = self.cluster_name
        if self.master_name is not None:
            env["GANETI_MASTER"] = self.master_name
        return env

    def BuildEnv(self, phase: str) -> dict[str, str]:
        """The complete environment hook scripts of ``phase`` get."""
        if phase not in _PREFIXES:
            raise errors.ProgrammerError("Unknown hooks phase %r" % phase)
        if self.hooks_path is None:
            raise errors.ProgrammerError("Operation %s runs no hooks" %
                                         self.opcode)
        env = self._BaseEnv(self.hooks_path, phase)
        phase_env = (self.pre_env if phase == constants.HOOKS_PHASE_PRE
                     else self._BuildEnv(phase))
        clash = set(env) & set(phase_env)
        if clash:
            raise errors.ProgrammerError(
                "Hooks environment keys %s are reserved" %
                ", ".join(sorted(clash)))
        env.update(phase_env)
        return env

    def RunPhase(self, phase: str,
                 nodes: list[str] | None = None) -> dict[str, Any] | None:
        """Run the hooks of ``phase``; the RPC results by node, or None
        if no node runs them.

        A pre-hook script failing raises HooksAbort naming every
        ``(node, script, output)``; post-hook failures and unreachable
        nodes only go to ``log_fn``.
        """
        if nodes is None:
            if phase == constants.HOOKS_PHASE_PRE:
                nodes = self.pre_nodes
            else:
                nodes = self.post_nodes
                if nodes and self.prepare_post_nodes_fn is not None:
                    nodes = _UniqueNodes(
                        self.prepare_post_nodes_fn(list(nodes)))
        if self.hooks_path is None or not nodes:
            return None
        env = self.BuildEnv(phase)
        results = self.hooks_execution_fn(list(nodes), self.hooks_path,
                                          phase, env)
        if not results:
            msg = "Communication Failure"
            if phase == constants.HOOKS_PHASE_PRE:
                raise errors.HooksFailure(msg)
            self.log_fn(msg)
            return results
        failures = []
        for node, result in results.items():
            node_name = getattr(result, "node", None) or node
            if result.offline:
                continue
            if result.fail_msg:
                self.log_fn("Communication failure to node %s: %s",
                            node_name, result.fail_msg)
                continue
            for script, status, output in result.payload or []:
                if status != constants.HKR_FAIL:
                    continue
                if phase == constants.HOOKS_PHASE_PRE:
                    failures.append((node_name, script, output))
                else:
                    self.log_fn("On %s script %s failed, output: %s",
                                node_name, script, output or "(no output)")
        if failures:
            raise errors.HooksAbort(failures)
        return results

    @staticmethod
    def BuildFromLu(hooks_execution_fn: HooksExecutionFn,
                    lu: Any) -> "HooksMaster":
        """The hooks of a logical unit, from its HPATH, HTYPE and
        BuildHooksNodes/BuildHooksEnv/PreparePostHookNodes.

        BuildHooksNodes returns ``(pre, post)`` node UUIDs, or
        ``(pre, post, post_names)`` to add nodes by name that are only in
        the configuration after Exec (a node being added).
        """
        nodes: tuple[Any, Any] = ([], [])
        if lu.HPATH is not None:
            hooks_nodes = lu.BuildHooksNodes()
            if len(hooks_nodes) == 2:
                nodes = (list(hooks_nodes[0]), list(hooks_nodes[1]))
            elif len(hooks_nodes) == 3:
                nodes = (list(hooks_nodes[0]),
                         list(hooks_nodes[1]) + list(hooks_nodes[2]))
            else:
                raise errors.ProgrammerError(
                    "%s.BuildHooksNodes returned %d lists, expected 2 or 3"
                    % (type(lu).__name__, len(hooks_nodes)))
        return HooksMaster(lu.op.OP_ID, lu.HPATH, nodes, hooks_execution_fn,
                           lu.BuildHooksEnv, lu.LogWarning, lu.HTYPE,
                           lu.cfg.GetClusterName(), lu.cfg.GetMasterNodeName(),
                           lu.PreparePostHookNodes)
