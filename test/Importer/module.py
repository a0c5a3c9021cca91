# RUN: %PYTHON %s | FileCheck %s
# RUN: %PYTHON %s | tc-opt | FileCheck %s --check-prefix=VERIFIED

# Module parameters: the graph AOTAutograd hands the backend takes them as
# inputs; a graph that reads them with get_attr imports them as
# fx.get_attr parameter values, bound to the live tensors (no copies).

import torch

from tc.importer import import_graph


class MyModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return torch.nn.functional.relu(self.lin(x))


gm = torch.fx.symbolic_trace(MyModule())
# Retarget the traced graph to ATen ops, keeping get_attr nodes.
with torch.no_grad():
    from torch.fx.experimental.proxy_tensor import make_fx
    aten = make_fx(gm)(torch.randn(4, 3))

imported = import_graph(aten, "my_module")
print(imported.text)
# CHECK-LABEL: fx.graph @my_module
# CHECK: %[[W:.*]] = fx.get_attr parameter "_param_constant0" : tensor<3x3xf32>
# CHECK: %[[B:.*]] = fx.get_attr parameter "_param_constant1" : tensor<3xf32>
# CHECK: %[[T:.*]] = fx.call_function "aten::t"(%[[W]])
# CHECK: fx.call_function "aten::addmm"(%[[B]], %{{.*}}, %[[T]])
# CHECK: fx.call_function "aten::relu"
# VERIFIED: fx.graph @my_module
