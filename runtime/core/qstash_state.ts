// Where the QStash dialect keeps its state: named JSON documents in the metadata database
// (storage/metadata/qstash_state_repo.ts), replicated to slaves with the other tables.
// Brokers before that kept each document in a file of the data folder; the first load moves
// it into the table and removes the file.
import { type FilePort, readWholeFile } from "../../storage/file_port.ts";

/** Named JSON documents (QstashStateRepo). */
export interface QstashStatePort {
  get(name: string): Promise<unknown>;
  put(name: string, value: unknown): Promise<void>;
}

/** The document `name`, from the table, else from the legacy file (moved into the table). */
export async function loadQstashState(
  state: QstashStatePort,
  name: string,
  legacy: { files: FilePort; path: string },
): Promise<unknown> {
  const stored = await state.get(name);
  if (stored !== undefined) return stored;
  const saved = readWholeFile(legacy.files, legacy.path);
  if (!saved) return undefined;
  const value = JSON.parse(new TextDecoder().decode(saved));
  await state.put(name, value);
  legacy.files.remove(legacy.path);
  return value;
}
