"""bench:serve's Flask peer (run under gunicorn)."""
from flask import Flask, Response, request

from common import predict

app = Flask(__name__)


@app.post("/predict")
def handle():
    return Response(predict(request.get_data()), mimetype="application/json")
