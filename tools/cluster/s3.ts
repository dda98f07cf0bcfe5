/**
 * The local cluster's S3 endpoint: s3rver (an S3-compatible server in Node) in the cluster
 * command's own process, on loopback, its objects in a folder of the cluster's data, the bucket
 * made. It checks signatures against its own fixed credentials, which the nodes are given.
 */
import { chmod, mkdir } from 'node:fs/promises';

import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
// @ts-expect-error s3rver ships no types
import S3rver from 's3rver';

/** s3rver's own credentials (it accepts no others). */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface ClusterS3 {
  endpoint: string;
  bucket: string;
  port: number;
  close(): Promise<void>;
}

/** s3rver on `port` (0: a free one) with its objects under `directory`, and `bucket` made in it. */
export async function startS3rver(directory: string, bucket: string, port = 0): Promise<ClusterS3> {
  // Its objects (the models and hooks deployed) for this user alone: s3rver takes any request with
  // its fixed credentials, so on a shared machine its loopback port is the one thing left open.
  await mkdir(directory, { recursive: true, mode: 0o700 });
  await chmod(directory, 0o700);
  const server = new S3rver({ port, address: '127.0.0.1', silent: true, directory });
  const address = (await server.run()) as { port: number };
  const endpoint = `http://127.0.0.1:${address.port}`;
  const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS });
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    // A folder kept from an earlier run holds it already.
    if ((error as Error).name !== 'BucketAlreadyOwnedByYou' && (error as Error).name !== 'BucketAlreadyExists')
      throw error;
  } finally {
    client.destroy();
  }
  return { endpoint, bucket, port: address.port, close: () => server.close() as Promise<void> };
}
