/** A Redis URL as it may be said (a log line, a banner, an error): its user and password left out. */
export function withoutCredentials(redisUrl: string): string {
  return redisUrl.replace(/\/\/[^@/]*@/, '//');
}
