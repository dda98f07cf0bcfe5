"""bench:serve's FastAPI peer (run under uvicorn)."""
from fastapi import FastAPI, Request, Response

from common import predict

app = FastAPI()


@app.post("/predict")
async def handle(request: Request):
    body = await request.body()
    return Response(predict(body), media_type="application/json")
