# RUN: %PYTHON %s > %t.mlir
# RUN: not tc-opt -tc-decompose %t.mlir 2>&1 | FileCheck %s

# FX node names and the user's source lines become MLIR locations, so a
# diagnostic from any pass points at the user's code.

import torch

from tc.importer import import_graph


class Model(torch.nn.Module):
    def forward(self, x):
        y = torch.sin(x)
        return torch.special.digamma(y)  # the line the error must name


ep = torch.export.export(Model(), (torch.randn(4),))
print(import_graph(ep.graph_module, "model").text)

# CHECK: locations.py:15:{{[0-9]+}}: error: 'fx.call_function' op cannot decompose 'aten::{{(special_)?}}digamma': no decomposition into prim ops
