import { readFile } from 'node:fs/promises';

import { type Command, CommanderError } from 'commander';

import type { CliContext } from '../context.js';
import { jobText } from '../format.js';

/** `--data`: JSON as given, `@file` (curl's convention) or `-` (stdin). */
async function dataArg(data: string | undefined): Promise<string> {
  if (data === undefined) return '{}';
  if (data === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  if (data.startsWith('@')) return readFile(data.slice(1), 'utf8');
  return data;
}

/** `hearth invoke` */
export function register(program: Command, { client, json, print, integer }: CliContext): void {
  program
    .command('invoke <name>')
    .description('call a function (its hook takes the body)')
    .option('--data <json>', 'the request body, JSON; @file reads it from a file, - from stdin')
    .option('--file <path>', 'the request body, from a file (bytes)')
    .option('--content-type <type>', "the body's content type")
    .option('--version <n>', 'a version instead of the traffic split', integer('--version'))
    .option('--timeout <ms>', 'a deadline, milliseconds', integer('--timeout'))
    .option('--idempotency-key <key>', 'a retry with the same key gets the first response')
    .option('--async', 'submit a job and print its id')
    .option('--wait', 'with --async: wait for the job and print it')
    .addHelpText(
      'after',
      `\nExamples:\n  hearth invoke tabular-mlp --data '{"rows": [[0.1, 0.2]]}'\n  hearth invoke tabular-mlp --data @request.json\n  cat request.json | hearth invoke tabular-mlp --data -\n  hearth invoke image-classifier --file cat.jpg --content-type image/jpeg`,
    )
    .action(
      async (
        name: string,
        o: {
          data?: string;
          file?: string;
          contentType?: string;
          version?: number;
          timeout?: number;
          idempotencyKey?: string;
          async?: boolean;
          wait?: boolean;
        },
      ) => {
        if (o.data !== undefined && o.file !== undefined)
          throw new CommanderError(2, 'hearth.usage', 'give --data or --file, not both');
        const body = o.file !== undefined ? new Uint8Array(await readFile(o.file)) : await dataArg(o.data);
        const options = {
          version: o.version,
          timeoutMs: o.timeout,
          idempotencyKey: o.idempotencyKey,
          contentType: o.contentType,
        };
        const hearth = client();
        if (o.async) {
          const job = await hearth.invokeAsync(name, body, options);
          if (!o.wait) return print(job, () => `job ${job.id} ${job.status}\nhearth jobs ${job.id}`);
          const done = await hearth.waitForJob(job.id);
          print(done, () => jobText(done));
          if (done.status === 'failed') process.exitCode = 1;
          return;
        }
        const r = await hearth.invoke(name, body, options);
        if (/json/.test(r.contentType)) print(r.json(), () => JSON.stringify(r.json(), null, 2));
        else if (json())
          console.log(
            JSON.stringify({
              contentType: r.contentType,
              version: r.version,
              base64: Buffer.from(r.body).toString('base64'),
            }),
          );
        else process.stdout.write(r.body);
      },
    );
}
