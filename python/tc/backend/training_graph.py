"""A training graph as an `autograd.Function` of tc's compiled forward
and backward (`TrainingGraph`), and the compile of the pair."""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import torch
import torch.fx

from tc import compiler, layouts
from tc.backend import common, partition

logger = logging.getLogger("tc")


def compile_split(gm: torch.fx.GraphModule, ops: list[torch.fx.Node],
                  settings: common.Settings, marks: Sequence[bool],
                  pending: Callable[[], compiler.TrainingFunctions]
                  | None = None, in_place: Sequence[bool] | None = None
                  ) -> compiler.TrainingFunctions | None:
    """The forward and backward functions of a training graph, or None
    (after logging, as `partition.compile_subgraph`); with `pending`
    (`start_split`'s), those it started. `in_place` (flags by input):
    the inputs read in place when they are dense permuted views
    (`_read_in_place`); by default none."""
    if settings.autotune:
        logger.info("tc: mode='max-autotune' compiles training graphs with "
                    "the default schedule")
    permutations = getattr(pending, "input_permutations", None)
    if pending is None:
        work, permutations = _laid_out(gm, in_place)

        def pending() -> compiler.TrainingFunctions:
            return compiler.compile_training(
                work, marks, dump_stages=settings.dump_stages)
    functions = partition.compile_subgraph(gm, "training", ops, settings,
                                           compile=pending)
    if functions is not None and permutations is not None:
        _read_in_place(functions, permutations, marks)
    return functions


def start_split(gm: torch.fx.GraphModule, ops: list[torch.fx.Node],
                settings: common.Settings, marks: Sequence[bool],
                in_place: Sequence[bool] | None = None
                ) -> compiler.PendingTraining | None:
    """`compile_split`'s first part: the graph imported and split, its
    halves' native compiles started (`compiler.start_training`), so that
    a graph's segments compile at once; `compile_split(...,
    pending=...)` waits for them. None (after logging, as compile_split)
    when the graph does not import or split. `in_place` as
    compile_split's."""
    try:
        work, permutations = _laid_out(gm, in_place)
        pending = compiler.start_training(work, marks,
                                          dump_stages=settings.dump_stages)
        pending.input_permutations = permutations
        return pending
    except Exception as error:  # logged and counted by compile_split
        compile_split(gm, ops, settings, marks,
                      pending=common.raising(error))
        return None


def _laid_out(gm: torch.fx.GraphModule, in_place: Sequence[bool] | None
              ) -> tuple[torch.fx.GraphModule,
                         list[tuple[int, ...] | None] | None]:
    if not in_place or not any(in_place):
        return gm, None
    return layouts.read_in_place(gm, only=in_place)


def _read_in_place(functions: compiler.TrainingFunctions,
                   permutations: Sequence[tuple[int, ...] | None],
                   marks: Sequence[bool]) -> None:
    """Lays out `functions`, compiled from a graph that takes the inputs
    with `permutations` (`layouts.read_in_place`: a dense permuted input,
    such as an attention's output in [batch, length, heads, dim] order, in
    its memory order): the forward and the backward read such an input
    (the backward: saved as the caller gave it) without a copy, and the
    backward returns its gradient in its layout. Copied to dense tensors,
    BEiT-base's attention outputs were 24 copies a training step, and
    their gradients 12 more (autograd's, into the output's layout). Not
    every such input: SigLIP-B's step on the H200 took 64.2 ms with all
    read so, 53.9 without (`segments` names the inputs)."""
    if not any(p is not None for p in permutations):
        return
    functions.forward.read_inputs_permuted(permutations)
    backward = functions.backward
    saved = [permutations[n] if kind == "input" and n < len(permutations)
             else None for kind, n in functions.saved]
    cotangents = len(backward.imported.input_specs) - len(saved)
    if any(p is not None for p in saved):
        backward.read_inputs_permuted(saved + [None] * cotangents)
    gradients = [p for p, marked in zip(permutations, marks) if marked]
    if any(p is not None for p in gradients):
        backward.write_outputs_permuted(gradients)


def may_carry_gradient(value: Any) -> bool:
    """Whether a node's value (its `val` meta) may carry a gradient: a
    floating-point tensor, a tuple holding one, or a value unknown. An
    integer or boolean value, such as a comparison's, does not, as in
    autograd."""
    if isinstance(value, (tuple, list)):
        return any(may_carry_gradient(v) for v in value)
    return value is None or (isinstance(value, torch.Tensor)
                             and value.is_floating_point())


def output_reach(gm: torch.fx.GraphModule, inputs: int) -> list[int]:
    """By input of training graph `gm` (its first `inputs` placeholders):
    the outputs whose value depends on it, as a bit mask (bit j: output
    j), through values that may carry a gradient (`may_carry_gradient`).
    A superset of autograd's paths: an input reaching none of the outputs
    the loss uses gets no gradient in eager."""
    depends: dict[torch.fx.Node, int] = {}
    index = 0
    result: list[int] = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            depends[node] = 1 << index if index < inputs else 0
            index += 1
        elif node.op == "output":
            outputs = node.args[0]
            if not isinstance(outputs, (tuple, list)):
                outputs = (outputs,)
            result = [depends.get(a, 0) if isinstance(a, torch.fx.Node)
                      else 0 for a in outputs]
        else:
            depends[node] = 0
            if may_carry_gradient(node.meta.get("val")):
                for arg in node.all_input_nodes:
                    depends[node] |= depends.get(arg, 0)
    return [sum(1 << j for j, mask in enumerate(result) if mask >> i & 1)
            for i in range(inputs)]


class TrainingGraph:
    """Calls a training graph through an autograd.Function of tc's forward
    and backward functions. Should the forward fail at run time (a GPU
    error, say), the traced ATen graph runs in eager under autograd from
    then on."""

    def __init__(self, functions: compiler.TrainingFunctions,
                 marks: list[bool], eager: torch.fx.GraphModule,
                 mutated: list[int],
                 differentiable: Sequence[bool] | None = None):
        self.functions = functions
        self.marks = marks
        self.eager = eager
        # Inputs the graph updates (batch norm's running statistics): their
        # new values are the last outputs, written back after each call.
        self.mutated = mutated
        self.failed = False
        forward = functions.forward
        specs = forward.imported.output_specs[:functions.num_outputs]
        self.output_specs = specs
        self.float_outputs = [dtype.is_floating_point for _, dtype in specs]
        # Float outputs that carry no gradient (`differentiable`, by the
        # caller's analysis) are marked non-differentiable too.
        self.no_gradient = [
            not f or (differentiable is not None and not differentiable[i])
            for i, f in enumerate(self.float_outputs)]
        self.structure = functions.output_structure
        # By input: the outputs its gradient flows from (a bit mask), and
        # by the mask of outputs with a gradient, the inputs that then get
        # None (computed once per mask: batch norm's running statistics
        # never have one).
        self.reaches = output_reach(eager, len(marks))
        self._unreached: dict[int, list[bool]] = {}
        # Zero cotangents, by output, made once (see zero_cotangent).
        self._zeros: dict[int, torch.Tensor] = {}
        owner = self

        class Function(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *args):
                # Random ops: the forward's seed is its last input, saved
                # like any other the backward reads (a dropout's mask is
                # recomputed from it rather than saved).
                forward = owner.functions.forward
                seed = forward.draw_seed()
                results = forward(*args, seed=seed)
                count = owner.functions.num_outputs
                outputs, extras = results[:count], results[count:]
                # Inputs written back after this call are saved as they
                # were.
                inputs = list(args) + ([seed] if seed is not None else [])
                sources = {"input": inputs, "output": outputs,
                           "extra": extras}
                ctx.save_for_backward(*[
                    args[n].clone() if kind == "input" and n in owner.mutated
                    else sources[kind][n]
                    for kind, n in owner.functions.saved])
                ctx.mark_non_differentiable(*[
                    o for o, no in zip(outputs, owner.no_gradient) if no])
                # Outputs without a gradient reach backward as None rather
                # than as zeros autograd allocates and fills on every call
                # (batch norm's running statistics: ResNet-50 had 159 a
                # step).
                ctx.set_materialize_grads(False)
                return tuple(outputs)

            @staticmethod
            @torch._disable_dynamo
            def backward(ctx, *grads):
                # Autograd calls this from the user's frame: a
                # `loss.backward()` inside a compiled function (a graph
                # break) would otherwise have Dynamo trace tc's own
                # runtime. Outputs the loss does not use get no gradient:
                # zeros.
                cotangents = [
                    g if g is not None else owner.zero_cotangent(i)
                    for i, (g, f) in enumerate(zip(grads,
                                                   owner.float_outputs))
                    if f]
                gradients = iter(owner.functions.backward(
                    *ctx.saved_tensors, *cotangents))
                # An input that reaches only unused outputs gets None, as
                # in eager (not the zeros the backward computes for it: a
                # parameter with a zero gradient still moves under AdamW's
                # weight decay and momentum, one with None does not).
                unreached = owner.unreached(grads)
                result = []
                for marked, none in zip(owner.marks, unreached):
                    gradient = next(gradients) if marked else None
                    result.append(None if none else gradient)
                return tuple(result)

        self.function = Function

    def unreached(self, grads: Sequence[Any]) -> list[bool]:
        """By input: whether it reaches none of the outputs that have a
        gradient in `grads` (the backward's)."""
        used = 0
        for i, grad in enumerate(grads):
            if grad is not None:
                used |= 1 << i
        unreached = self._unreached.get(used)
        if unreached is None:
            unreached = self._unreached[used] = [
                not reach & used for reach in self.reaches]
        return unreached

    def zero_cotangent(self, index: int) -> torch.Tensor:
        """The zero gradient of float output `index` (one the loss does not
        use), made once and kept: tc's backward reads its inputs and never
        writes them (its outputs alias none of them), so the same zeros
        serve every call."""
        zeros = self._zeros.get(index)
        if zeros is None:
            shape, dtype = self.output_specs[index]
            zeros = self._zeros[index] = torch.zeros(
                shape, dtype=dtype, device=self.functions.forward.device)
        return zeros

    def __call__(self, *args: Any) -> Any:
        if not self.failed:
            try:
                outputs = self.function.apply(*args)
                if self.structure == "single":
                    return outputs[0]
                return self._write_back(args, outputs)
            except Exception as error:  # e.g. a GPU error: eager from now on
                self.failed = True
                common.runtime_fallback("compiled training graph", error)
        return self._write_back(args, self.eager(*args))

    def _write_back(self, args: Sequence[Any], outputs: Sequence[Any]) -> Any:
        """The user's outputs, after copying the updated inputs' new
        values (the last outputs) into them."""
        count = len(outputs) - len(self.mutated)
        if self.mutated:
            # One multi-tensor copy per dtype (a launch or two each), not
            # one per input: PyTorch's fused copy takes lists of one dtype
            # and copies a mixed list one tensor at a time (batch norm's
            # float statistics and int64 counters: ResNet-50's 159 copies
            # were 159 memcpys a step).
            groups: dict[torch.dtype, tuple[list, list]] = {}
            for i, new in zip(self.mutated, outputs[count:]):
                into, values = groups.setdefault(new.dtype, ([], []))
                into.append(args[i])
                values.append(new)
            with torch.no_grad():
                for into, values in groups.values():
                    torch._foreach_copy_(into, values)
        outputs = outputs[:count]
        return list(outputs) if self.structure == "list" else tuple(outputs)
