export { loadNotesConfig, type NotesConfig } from "./config.ts";
export { type NotesService, openNotesService } from "./service.ts";
