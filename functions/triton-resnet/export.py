"""Makes 1/model.pt: ResNet-50 from torchvision with fixed random weights (nothing downloaded),
as TorchScript, in Triton's model-folder layout."""
import os

import torch
import torchvision

if __name__ == "__main__":
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).eval()
    os.makedirs("1", exist_ok=True)
    torch.jit.script(model).save(os.path.join("1", "model.pt"))
    print("wrote 1/model.pt")
