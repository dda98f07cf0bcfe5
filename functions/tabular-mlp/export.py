"""Makes model.pt: the weight-heavy MLP of Hearth's benchmarks (1024 -> 4096 -> 1024, 8.4M
parameters), fixed random weights, as TorchScript."""
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(1024, 4096)
        self.fc2 = nn.Linear(4096, 1024)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


if __name__ == "__main__":
    torch.jit.script(MLP().eval()).save("model.pt")
    print("wrote model.pt")
