/** The moments the memory page's address and date fields carry, read in the person's time zone. */

/** The end of a chosen day, in the person's time zone, as the API's ISO time. */
export function endOfDay(date: string): string | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return null;
  const moment = new Date(`${date}T23:59:59.999`);
  return Number.isNaN(moment.getTime()) ? null : moment.toISOString();
}

/**
 * A moment as the address carries it, as the API's ISO time: a day (its
 * end), a day and a time of day in the person's time zone (the end of that
 * minute or second), or an exact instant (a version's own record time).
 */
export function moment(value: string): string | null {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return endOfDay(value);
  const local = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(:\d{2})?$/.exec(value);
  const parsed = local === null ? new Date(value) : new Date(`${local[1]}${local[2] ?? ':59'}.999`);
  return /^\d{4}-\d{2}-\d{2}T/.test(value) && !Number.isNaN(parsed.getTime()) ? parsed.toISOString() : null;
}

const pad = (value: number) => String(value).padStart(2, '0');

/** The day and the time of day of a moment, in the person's time zone, for the date and time fields. */
export function dayAndTime(value: string): { day: string; time: string } {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return { day: value, time: '' };
  const local = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}(?::\d{2})?)$/.exec(value);
  if (local !== null) return { day: local[1]!, time: local[2]! };
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) return { day: '', time: '' };
  return { day: `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())}`, time: `${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}` };
}
