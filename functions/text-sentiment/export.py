"""Makes model.pt: a small text classifier (embedding -> mean pooling -> linear -> softmax) for
word ids of any length, with deterministic weights: each word's embedding carries its polarity
from vocab.json (positive +1, negative -1, others 0) in its first dimension, and small fixed noise
in the rest. Nothing is downloaded or trained."""
import json

import torch
from torch import nn


class Sentiment(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        words = vocab["words"]
        torch.manual_seed(0)
        self.embedding = nn.Embedding(len(words), 8)
        with torch.no_grad():
            self.embedding.weight.normal_(0.0, 0.05)
            for i, w in enumerate(words):
                self.embedding.weight[i, 0] = 1.0 if w in vocab["positive"] else -1.0 if w in vocab["negative"] else 0.0
        self.fc = nn.Linear(8, 2)
        with torch.no_grad():
            self.fc.weight.zero_()
            self.fc.weight[0, 0] = -6.0  # negative
            self.fc.weight[1, 0] = 6.0   # positive
            self.fc.bias.zero_()

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pooled = self.embedding(ids).mean(dim=0)
        return torch.softmax(self.fc(pooled), dim=0)


if __name__ == "__main__":
    with open("vocab.json") as f:
        vocab = json.load(f)
    torch.jit.script(Sentiment(vocab).eval()).save("model.pt")
    print("wrote model.pt")
