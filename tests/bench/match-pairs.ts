/**
 * Hand-written facts about one person, each with how that person might ask to
 * forget it, correct it (it was never true) and update it (it changed), as
 * the offline engine passes them on: the words after "forget that",
 * "actually," and "update:". Every fact is a different attribute of the
 * person, so a request about one fact is unrelated to every other fact; many
 * attributes share words on purpose (where I live and where my sister lives,
 * what I like and what I drink, my dog's and my cat's names), which makes the
 * unrelated pairs hard. Some requests share no word with their fact ("my car"
 * for "I drive a red Fiat"): only a model that knows meanings finds those.
 */
export interface MatchItem {
  fact: string;
  forget: string;
  correct: string;
  /** Null where a fact cannot change (a birthday, a blood type). */
  update: string | null;
}

export const matchItems: readonly MatchItem[] = [
  { fact: 'my sister lives in Lisbon', forget: 'where my sister lives', correct: 'my sister lives in Porto', update: 'my sister moved to Madrid' },
  { fact: 'I like pizza', forget: 'I like pizza', correct: "I don't like pizza", update: 'I no longer like pizza' },
  { fact: 'my dog is called Rex', forget: "my dog's name", correct: 'my dog is called Max', update: 'we renamed our dog Bruno' },
  { fact: 'I drink coffee every morning', forget: 'my morning coffee', correct: 'I drink tea every morning', update: 'I now drink decaf in the morning' },
  { fact: 'my phone number ends in 42', forget: 'my phone number', correct: 'my phone number ends in 24', update: 'I have a new phone number ending in 77' },
  { fact: 'I work at a bakery', forget: 'where I work', correct: 'I work at a brewery', update: 'I now work at a bank' },
  { fact: 'my birthday is on 3 May', forget: 'my birthday', correct: 'my birthday is on 5 May', update: null },
  { fact: 'I am allergic to peanuts', forget: 'my peanut allergy', correct: 'I am allergic to walnuts', update: 'I am no longer allergic to peanuts' },
  { fact: 'my favourite colour is green', forget: 'my favourite colour', correct: 'my favourite colour is blue', update: 'my favourite colour is now orange' },
  { fact: 'I drive a red Fiat', forget: 'my car', correct: 'I drive a red Ford', update: 'I now drive an electric Renault' },
  { fact: 'my wife is called Maria', forget: "my wife's name", correct: 'my wife is called Marta', update: null },
  { fact: 'I play tennis on Sundays', forget: 'that I play tennis', correct: 'I play tennis on Saturdays', update: 'I play padel on Sundays now' },
  { fact: "my son goes to Saint Mary's school", forget: "my son's school", correct: "my son goes to Saint Mark's school", update: 'my son goes to Oakwood high school now' },
  { fact: 'I am vegetarian', forget: 'that I am vegetarian', correct: 'I am vegan', update: 'I am not vegetarian any more' },
  { fact: 'my flat is on the fourth floor', forget: 'which floor my flat is on', correct: 'my flat is on the fifth floor', update: 'we moved to a flat on the second floor' },
  { fact: 'I take the 8:10 train to work', forget: 'my train to work', correct: 'I take the 8:40 train to work', update: 'I take the 7:50 train now' },
  { fact: 'my manager is Paolo', forget: 'who my manager is', correct: 'my manager is Paola', update: 'my new manager is Giulia' },
  { fact: 'I speak Portuguese', forget: 'that I speak Portuguese', correct: 'I speak Spanish', update: 'I speak Portuguese and German now' },
  { fact: 'my cat is called Tom', forget: 'my cat', correct: 'my cat is called Tim', update: null },
  { fact: 'I go to the gym on Mondays', forget: 'my gym days', correct: 'I go to the gym on Tuesdays', update: 'I go to the gym on Wednesdays now' },
  { fact: 'my mother lives in Oslo', forget: 'where my mother lives', correct: 'my mother lives in Bergen', update: 'my mother moved to Stockholm' },
  { fact: 'I like jazz', forget: 'that I like jazz', correct: 'I like blues, not jazz', update: 'I am into techno these days' },
  { fact: 'my blood type is A positive', forget: 'my blood type', correct: 'my blood type is O positive', update: null },
  { fact: 'I have two children', forget: 'how many children I have', correct: 'I have three children', update: 'we now have three children' },
  { fact: 'my dentist is Dr Rossi', forget: 'my dentist', correct: 'my dentist is Dr Russo', update: 'I switched to Dr Bianchi as my dentist' },
  { fact: 'I read science fiction', forget: 'what I read', correct: 'I read crime novels', update: 'I mostly read history books now' },
  { fact: 'my brother works as a nurse', forget: "my brother's job", correct: 'my brother works as a paramedic', update: 'my brother is a doctor now' },
  { fact: 'I wake up at six', forget: 'when I wake up', correct: 'I wake up at seven', update: 'I wake up at half past five now' },
  { fact: 'my favourite film is Alien', forget: 'my favourite film', correct: 'my favourite film is Aliens', update: 'my favourite film is now Arrival' },
  { fact: 'I support Benfica', forget: 'which team I support', correct: 'I support Sporting', update: null },
  { fact: 'my laptop is a ThinkPad', forget: 'my laptop', correct: 'my laptop is a MacBook', update: 'I now use a Dell laptop' },
  { fact: 'I am learning the piano', forget: 'that I am learning the piano', correct: 'I am learning the guitar', update: 'I gave up the piano' },
  { fact: 'my daughter is seven', forget: "my daughter's age", correct: 'my daughter is eight', update: 'my daughter turned eight' },
  { fact: 'I drink green tea in the afternoon', forget: 'my afternoon tea', correct: 'I drink black tea in the afternoon', update: 'I drink mint tea in the afternoon now' },
  { fact: 'my best friend is Carla', forget: 'who my best friend is', correct: 'my best friend is Clara', update: null },
  { fact: 'I live in Porto', forget: 'where I live', correct: 'I live in Braga', update: 'I moved to Lisbon' },
  { fact: 'my husband is allergic to cats', forget: "my husband's allergy", correct: 'my husband is allergic to dogs', update: null },
  { fact: 'I cycle to work', forget: 'how I get to work', correct: 'I walk to work', update: 'I take the bus to work now' },
  { fact: 'my gym membership ends in June', forget: 'my gym membership', correct: 'my gym membership ends in July', update: 'I renewed my gym membership until December' },
  { fact: 'I prefer window seats', forget: 'my seat preference', correct: 'I prefer aisle seats', update: null },
];
