/**
 * Deterministic synthetic memory: facts that read like what people tell an
 * agent ("Ilvara repaired the rusty lantern in Dorvelle on Tuesday"), and
 * search queries paraphrased from them. Same seed, same facts, on any machine.
 *
 * The vocabulary (~2,000 words) mixes real English words, which the
 * `english` full-text configuration stems, with invented proper nouns, which
 * it keeps whole; both give the full-text arm and the hashing embedder (words,
 * bigrams, character n-grams) something to match.
 */

/** mulberry32: a small, fast, seedable PRNG; returns floats in [0, 1). */
export function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

function words(text: string): string[] {
  return text.trim().split(/\s+/);
}

const verbs = words(`
  bought sold repaired painted borrowed lent found lost cooked baked planted watered cleaned packed unpacked
  shipped ordered returned fixed built broke carried hid stored framed measured polished sanded varnished
  photographed sketched recorded wrote read translated studied taught learned practised rehearsed played
  won collected traded wrapped delivered inspected tested tuned assembled dismantled sewed knitted mended
  washed dried ironed folded labelled counted weighed sorted archived printed scanned signed stamped
  posted mailed received gifted donated rented insured restored moved lifted dropped opened locked
  unlocked charged replaced upgraded installed painted carved glued welded drilled hammered stitched
  brewed roasted grilled fried steamed pickled froze thawed sliced peeled chopped mixed poured tasted
`);

const adjectives = words(`
  red blue green yellow purple orange black white grey brown golden silver copper bronze crimson amber
  teal violet scarlet ivory small large tiny huge heavy light narrow wide tall short long round square
  flat curved sharp blunt smooth rough soft hard warm cold hot cool wet dry clean dirty new old ancient
  modern vintage rusty shiny dull bright dark quiet loud fast slow cheap expensive rare common fragile
  sturdy broken spare favourite borrowed handmade wooden metal glass paper leather woollen cotton silk
  plastic ceramic marble granite velvet linen wicker bamboo canvas folding electric manual digital
  analogue portable foldable waterproof striped spotted checked plain fancy simple elegant clumsy
  antique secondhand brand-new lucky cursed haunted noisy silent fragrant bitter sweet sour salty spicy
  fresh stale ripe raw frozen crispy chewy creamy
`);

const nouns = words(`
  lamp lantern chair table desk sofa bench stool shelf cabinet drawer wardrobe mirror clock watch radio
  camera phone laptop tablet keyboard printer speaker headphones guitar violin piano flute drum trumpet
  cello harp banjo ukulele accordion bicycle scooter skateboard kayak canoe tent backpack suitcase wallet
  umbrella hat scarf glove jacket coat sweater boot sandal shoe sock necklace ring bracelet earring brooch
  kettle teapot mug cup plate bowl spoon fork knife pan pot oven toaster blender grinder sieve ladle
  whisk tray basket bucket ladder hammer wrench screwdriver drill saw chisel shovel rake hose sprinkler
  plant cactus fern orchid rose tulip lily daisy sunflower bonsai herb basil mint rosemary thyme sage
  tomato pepper cucumber carrot potato onion garlic lemon orange apple pear plum cherry grape melon
  bread cake pie tart cookie muffin pancake waffle soup stew curry salad sandwich pizza pasta noodle
  rice cheese butter honey jam chocolate coffee tea wine cider beer juice notebook diary journal letter
  postcard map atlas novel poem recipe manual ticket passport receipt contract invoice calendar poster
  painting portrait sculpture vase candle blanket pillow quilt rug curtain carpet towel sheet mattress
  fridge freezer heater fan boiler window door gate fence roof chimney garage shed greenhouse garden
  balcony porch attic cellar kitchen pantry studio workshop library museum gallery theatre cinema
  stadium market bakery pharmacy clinic school office factory warehouse harbour station airport bridge
  tower castle chapel cottage cabin villa apartment hotel hostel campsite vineyard orchard farm meadow
  forest river lake beach island mountain valley canyon desert glacier volcano waterfall cave cliff
  telescope microscope compass barometer thermometer globe abacus typewriter sewing-machine loom spindle
  puzzle chessboard kite yo-yo marble domino deck dice trophy medal badge certificate diploma
  engine motor battery charger cable adapter router antenna satellite drone robot sensor switch valve
  puppy kitten parrot goldfish hamster rabbit tortoise pony donkey goat sheep chicken duck goose
  budget loan mortgage pension salary invoice refund deposit subscription membership warranty
  appointment interview exam lecture seminar workshop concert festival wedding birthday anniversary
`);

const relations = words(`
  sister brother mother father aunt uncle cousin niece nephew grandmother grandfather daughter son
  neighbour colleague landlord friend mentor partner roommate
`);

const days = words('Monday Tuesday Wednesday Thursday Friday Saturday Sunday');
const months = words('January February March April May June July August September October November December');
const times = words('morning afternoon evening night dawn noon midnight weekend');

const onsets = words('b br c ch d dr f fl g gr h j k kl l m n p pr qu r s sh st t th tr v w z');
const vowels = words('a e i o u a e i o ai ea ou');
const codas = words('n l r s th nd rt x m ck');

/** An invented proper noun of two (sometimes three) syllables, capitalised. */
function inventName(random: () => number, endings: readonly string[]): string {
  const syllables = random() < 0.8 ? 2 : 3;
  let name = '';
  for (let index = 0; index < syllables; index += 1) {
    name += pick(random, onsets) + pick(random, vowels);
    if (random() < 0.25) name += pick(random, codas);
  }
  name += pick(random, endings);
  return name.charAt(0).toUpperCase() + name.slice(1);
}

function inventNames(random: () => number, count: number, endings: readonly string[], taken: Set<string>): string[] {
  const names: string[] = [];
  while (names.length < count) {
    const name = inventName(random, endings);
    if (taken.has(name.toLowerCase())) continue;
    taken.add(name.toLowerCase());
    names.push(name);
  }
  return names;
}

export interface Vocabulary {
  people: string[];
  places: string[];
  /** How many distinct words the sentences draw from. */
  size: number;
}

export function createVocabulary(seed: number): Vocabulary {
  const random = createRandom(seed);
  const taken = new Set([...verbs, ...adjectives, ...nouns, ...relations, ...days, ...months, ...times].map((word) => word.toLowerCase()));
  const people = inventNames(random, 650, ['', 'a', 'o', 'ia', 'en', 'el'], taken);
  const places = inventNames(random, 650, ['ville', 'ford', 'mouth', 'haven', 'burg', 'dale', 'wick', 'stead', 'port', 'moor'], taken);
  return { people, places, size: taken.size };
}

/** One synthetic fact: a sentence about a person of the vocabulary. */
export function createFact(random: () => number, vocabulary: Vocabulary): string {
  const name = pick(random, vocabulary.people);
  const other = pick(random, vocabulary.people);
  const place = pick(random, vocabulary.places);
  const verb = pick(random, verbs);
  const adjective = pick(random, adjectives);
  const noun = pick(random, nouns);
  const noun2 = pick(random, nouns);
  const day = pick(random, days);
  switch (Math.floor(random() * 8)) {
    case 0:
      return `${name} ${verb} the ${adjective} ${noun} in ${place} on ${day}.`;
    case 1:
      return `${name} keeps a ${adjective} ${noun} next to the ${noun2} at the cottage in ${place}.`;
    case 2:
      return `${name}'s ${pick(random, relations)} ${verb} a ${adjective} ${noun} from ${place} every ${pick(random, times)}.`;
    case 3:
      return `On ${day} ${name} and ${other} ${verb} the ${noun} at the ${noun2} in ${place}.`;
    case 4:
      return `${name} prefers the ${adjective} ${noun} to the ${pick(random, adjectives)} ${noun2}.`;
    case 5:
      return `${name} met ${other} in ${place} in ${pick(random, months)} to talk about the ${adjective} ${noun}.`;
    case 6:
      return `${name} ${verb} ${other}'s ${noun} and left it by the ${noun2} on ${day} ${pick(random, times)}.`;
    default:
      return `In ${pick(random, months)} ${name} plans to visit ${place} with a ${adjective} ${noun} and a ${noun2}.`;
  }
}

const dropped = new Set(words('the a an in on at to and of from with by it every next'));

/**
 * A query as a person might type it about `fact`: small words dropped, about
 * a third of the rest dropped too, the remainder shuffled, at least two words.
 */
export function paraphrase(random: () => number, fact: string): string {
  const content = fact
    .replace(/'s\b/g, '')
    .replace(/[.,]/g, '')
    .split(/\s+/)
    .filter((word) => word !== '' && !dropped.has(word.toLowerCase()));
  let kept = content.filter(() => random() >= 0.35);
  if (kept.length < 2) kept = content.slice(0, 2);
  for (let index = kept.length - 1; index > 0; index -= 1) {
    const other = Math.floor(random() * (index + 1));
    [kept[index], kept[other]] = [kept[other]!, kept[index]!];
  }
  return kept.join(' ');
}
