"""The model both python peers serve, one request per forward, as a traditional deployment does."""
import json
import os

import torch

torch.set_num_threads(int(os.environ.get("PEER_THREADS", "1")))
MODEL = torch.jit.load(os.environ["PEER_MODEL"]).eval()
KIND = os.environ.get("PEER_KIND", "mlp")


def predict(body: bytes) -> bytes:
    """MLP: JSON {"inputs": [1024 floats]}; ResNet-50: raw FP32 bytes of 3×224×224. JSON out."""
    with torch.inference_mode():
        if KIND == "mlp":
            x = torch.tensor(json.loads(body)["inputs"], dtype=torch.float32).reshape(1, 1024)
        else:
            x = torch.frombuffer(bytearray(body), dtype=torch.float32).reshape(1, 3, 224, 224)
        y = MODEL(x)
    return json.dumps({"outputs": y.reshape(-1).tolist()}).encode()
