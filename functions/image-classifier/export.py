"""Makes model.pt: ResNet-50 from torchvision with fixed random weights (nothing is downloaded:
swap in trained weights you have, e.g. model.load_state_dict(torch.load("resnet50.pth"))), as
TorchScript. labels.json beside it is torchvision's ImageNet label list, written by
`python3 export.py --labels`."""
import json
import sys

import torch
import torchvision

if __name__ == "__main__":
    if "--labels" in sys.argv:
        from torchvision.models import ResNet50_Weights
        with open("labels.json", "w") as f:
            json.dump(ResNet50_Weights.IMAGENET1K_V1.meta["categories"], f)
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).eval()
    torch.jit.script(model).save("model.pt")
    print("wrote model.pt")
