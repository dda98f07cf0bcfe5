// {"rows": [[1024 numbers], ...]} in (or one row: {"row": [...]}), {"scores": [[1024], ...]} out.
import { defineHook, InvalidInputError, inputFromJson, tensorToJson } from '@hearth/sdk';

export default defineHook({
  pre(request, ctx) {
    if (request.kind !== 'json') throw new InvalidInputError('send JSON: {"rows": [[1024 numbers], ...]}');
    const body = request.json as { rows?: unknown; row?: unknown };
    const rows = body.rows ?? (body.row === undefined ? undefined : [body.row]);
    if (!Array.isArray(rows))
      throw new InvalidInputError('send {"rows": [[1024 numbers], ...]} or {"row": [1024 numbers]}');
    // Checked against hearth.yaml's x (FP32, [batch, 1024]): a row of another length is a 400.
    return { x: inputFromJson(ctx, 'x', rows, body.rows === undefined ? 'row' : 'rows') };
  },
  post(outputs) {
    return { scores: tensorToJson(outputs.y!) };
  },
});
