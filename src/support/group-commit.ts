export interface GroupCommitOptions<Item, Result> {
  /** The most items one group carries. */
  maxSize: number;
  /**
   * Carries `items` in one transaction and resolves, after its commit, with one result per item
   * in the same order.
   */
  execute(items: readonly Item[]): Promise<Result[]>;
  /**
   * Whether a group's failure is everyone's (the database unreachable, a commit whose fate is
   * unknown), so that its items fail together instead of being tried again in smaller groups.
   */
  failsEveryone(error: unknown): boolean;
}

interface Waiting<Item, Result> {
  item: Item;
  resolve(result: Result): void;
  reject(error: unknown): void;
}

/**
 * Group commit: items submitted while a group is being executed wait and form the next group, so
 * that one transaction carries as many as arrive meanwhile. With nothing in flight, an item waits
 * only for the end of the event loop's current turn, so that the items of answers that arrived
 * together (one poll of the sockets) share the first transaction too: on SQLite, whose
 * transactions run without yielding, nothing could ever arrive "meanwhile". Each caller is
 * answered only when the group that carried its item has committed (or failed). A group that
 * fails for one of its items is split in halves and each half tried again, down to single items,
 * so one bad item cannot sink the others.
 */
export class GroupCommit<Item, Result> {
  private waiting: Waiting<Item, Result>[] = [];
  private draining = false;

  constructor(private readonly options: GroupCommitOptions<Item, Result>) {}

  submit(item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (!this.draining) {
        this.draining = true;
        setImmediate(this.startDraining);
      }
    });
  }

  private readonly startDraining = (): void => void this.drain();

  private async drain(): Promise<void> {
    while (this.waiting.length > 0) {
      const group = this.waiting.splice(0, this.options.maxSize);
      await this.carry(group);
    }
    this.draining = false;
  }

  /** Never throws: every item of `group` is answered. */
  private async carry(group: readonly Waiting<Item, Result>[]): Promise<void> {
    let results: Result[];
    try {
      results = await this.options.execute(group.map((waiting) => waiting.item));
    } catch (error) {
      if (group.length === 1 || this.options.failsEveryone(error)) {
        for (const waiting of group) waiting.reject(error);
        return;
      }
      const half = Math.ceil(group.length / 2);
      await this.carry(group.slice(0, half));
      await this.carry(group.slice(half));
      return;
    }
    if (results.length !== group.length) {
      const error = new Error(`a group of ${group.length} gave ${results.length} results`);
      for (const waiting of group) waiting.reject(error);
      return;
    }
    results.forEach((result, index) => group[index]?.resolve(result));
  }
}
