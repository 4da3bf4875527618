// Submitted statements, kept in memory for a while after they end (the real
// API keeps them 24 h), with the active-statement limit and ClientToken
// idempotency.
import { DataApiError, notFound, validation } from './errors.ts';
import type { Statement, StatementPart, StatementStatus } from './statement.ts';

export interface StatementStoreOptions {
  maxActiveStatements: number;
  /** How long a statement and its result stay after it ends. */
  retentionMs: number;
  /** How long a ClientToken maps to its statement. */
  clientTokenMs: number;
}

export interface ListFilter {
  status?: StatementStatus;
  statementNamePrefix?: string;
  database?: string;
  clusterIdentifier?: string;
  workgroupName?: string;
  /** Only the statements submitted in this IAM session (ListStatements with RoleLevel false). */
  session?: string;
}

const ID = /^([a-z0-9]{8}(?:-[a-z0-9]{4}){3}-[a-z0-9]{12})(?::(\d+))?$/;

export class StatementStore {
  /** Insertion order is submission order. */
  private readonly statements = new Map<string, Statement>();
  private readonly tokens = new Map<string, { statementId: string; fingerprint: string; expiresAt: number }>();
  private readonly sweeper: NodeJS.Timeout;
  /** Not yet terminal, or ended since the last count. */
  private readonly active = new Set<Statement>();
  private submitted = 0;
  /**
   * Statement names, sorted, and each name's statements with their
   * submission numbers: ListStatements by a name prefix reads only the
   * names that start with it (a batch of 87,600 chunk loads asks once per
   * chunk; a scan of every statement each time would be quadratic).
   */
  private readonly names: string[] = [];
  private readonly byName = new Map<string, { statement: Statement; seq: number }[]>();

  constructor(private readonly options: StatementStoreOptions) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(options.retentionMs, 60_000));
    this.sweeper.unref();
  }

  /** Statements submitted since start, expired ones included. */
  get submittedCount(): number {
    return this.submitted;
  }

  activeCount(): number {
    for (const s of this.active) if (s.isTerminal) this.active.delete(s);
    return this.active.size;
  }

  /** The statement an earlier request with this ClientToken created, if any. */
  byClientToken(token: string | undefined, fingerprint: string): Statement | undefined {
    if (!token) return undefined;
    const entry = this.tokens.get(token);
    if (!entry || entry.expiresAt < Date.now()) return undefined;
    if (entry.fingerprint !== fingerprint) {
      throw validation('The ClientToken was already used with a different request.');
    }
    return this.statements.get(entry.statementId);
  }

  add(statement: Statement, clientToken: string | undefined, fingerprint: string): void {
    if (this.activeCount() >= this.options.maxActiveStatements) {
      throw new DataApiError(
        'ActiveStatementsExceededException',
        `Active statements exceeded the limit of ${this.options.maxActiveStatements}. Wait for running statements to finish.`,
      );
    }
    this.statements.set(statement.id, statement);
    this.active.add(statement);
    this.submitted++;
    const name = statement.statementName;
    if (name !== undefined) {
      const named = this.byName.get(name);
      if (named) named.push({ statement, seq: this.submitted });
      else {
        this.names.splice(this.firstNameFrom(name), 0, name);
        this.byName.set(name, [{ statement, seq: this.submitted }]);
      }
    }
    if (clientToken) {
      this.tokens.set(clientToken, { statementId: statement.id, fingerprint, expiresAt: Date.now() + this.options.clientTokenMs });
    }
  }

  /** Resolves `<uuid>` or `<uuid>:<n>` (a batch's n-th sub-statement, 1-based). */
  get(id: unknown): { statement: Statement; part?: StatementPart } {
    const match = typeof id === 'string' ? ID.exec(id) : null;
    if (!match) {
      throw validation(
        `1 validation error detected: Value '${String(id)}' at 'id' failed to satisfy constraint: Member must satisfy regular expression pattern: ^[a-z0-9]{8}(-[a-z0-9]{4}){3}-[a-z0-9]{12}(:\\d+)?$`,
      );
    }
    const statement = this.statements.get(match[1]!);
    if (!statement) throw notFound(id as string);
    if (match[2] === undefined) return { statement };
    const part = statement.isBatch ? statement.parts[Number(match[2]) - 1] : undefined;
    if (!part) throw notFound(id as string);
    return { statement, part };
  }

  /** Index in `names` of the first name not before `prefix`. */
  private firstNameFrom(prefix: string): number {
    let low = 0;
    let high = this.names.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.names[mid]! < prefix) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /** Newest first. */
  list(filter: ListFilter): Statement[] {
    const prefix = filter.statementNamePrefix;
    let candidates: Statement[];
    if (prefix) {
      const named: { statement: Statement; seq: number }[] = [];
      for (let i = this.firstNameFrom(prefix); i < this.names.length && this.names[i]!.startsWith(prefix); i++) named.push(...this.byName.get(this.names[i]!)!);
      candidates = named.sort((a, b) => b.seq - a.seq).map((n) => n.statement);
    } else {
      candidates = [...this.statements.values()].reverse();
    }
    return candidates.filter((s) => {
      if (filter.status && s.status !== filter.status) return false;
      if (filter.statementNamePrefix && !(s.statementName ?? '').startsWith(filter.statementNamePrefix)) return false;
      if (filter.database && s.target.database !== filter.database) return false;
      if (filter.clusterIdentifier && s.target.clusterIdentifier !== filter.clusterIdentifier) return false;
      if (filter.workgroupName && s.target.workgroupName !== filter.workgroupName) return false;
      if (filter.session !== undefined && s.session !== filter.session) return false;
      return true;
    });
  }

  all(): Statement[] {
    return [...this.statements.values()];
  }

  /** Forgets statements that ended more than the retention ago, and their results. */
  sweep(now = Date.now()): void {
    for (const [id, s] of this.statements) {
      if (s.isTerminal && s.updatedAt.getTime() + this.options.retentionMs <= now) {
        for (const part of s.parts) part.dropResult();
        this.statements.delete(id);
        this.forgetName(s);
      }
    }
    for (const [token, entry] of this.tokens) if (entry.expiresAt < now) this.tokens.delete(token);
  }

  private forgetName(statement: Statement): void {
    const name = statement.statementName;
    if (name === undefined) return;
    const left = (this.byName.get(name) ?? []).filter((n) => n.statement !== statement);
    if (left.length > 0) {
      this.byName.set(name, left);
      return;
    }
    this.byName.delete(name);
    const at = this.firstNameFrom(name);
    if (this.names[at] === name) this.names.splice(at, 1);
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}
