import { describeChannelConformance } from '@roster/channels/conformance';
import { startFakeDiscord } from './fake-discord.js';

describeChannelConformance('discord', { start: () => startFakeDiscord() });
