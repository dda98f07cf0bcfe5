"""bench:image's Flask peer (run under gunicorn): an image upload in, the top 5 out, written the way
a Python user writes it — PIL decodes, torchvision.transforms preprocesses, the TorchScript model
runs one request per forward."""
import io
import json
import os

import torch
import torchvision.transforms as T
from flask import Flask, Response, request
from PIL import Image

torch.set_num_threads(int(os.environ.get("PEER_THREADS", "1")))
MODEL = torch.jit.load(os.environ["PEER_MODEL"]).eval()
# The labels the Hearth side answers with (functions/image-classifier/labels.json).
LABELS = json.load(open(os.environ["PEER_LABELS"]))
PREPROCESS = T.Compose(
    [
        T.Resize(256),
        T.CenterCrop(224),
        T.ToTensor(),
        T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ]
)

app = Flask(__name__)


@app.post("/predict")
def predict():
    image = Image.open(io.BytesIO(request.get_data())).convert("RGB")
    x = PREPROCESS(image).unsqueeze(0)
    with torch.inference_mode():
        scores = torch.softmax(MODEL(x)[0], 0)
    top = torch.topk(scores, 5)
    body = {
        "top5": [
            {"index": int(i), "label": LABELS[int(i)], "score": float(s)} for s, i in zip(top.values, top.indices)
        ]
    }
    return Response(json.dumps(body), mimetype="application/json")
